"""Issue 33.4: the same mistake is refused the same way by every command.

``am slice --branch main --commit <a feature commit>`` was served, titled "@ main", where ``am fact add``
refuses the same pair; ``am fact list --repo clik`` / ``--branch mian`` / ``--topic nope`` said "no facts
match" and exited 0, where ``am slice`` names the closest name and exits 13.
"""

from __future__ import annotations

from typing import Any

from test_worlds_trust import am, head, ok, world  # noqa: F401  (world is a fixture)


def test_slice_refuses_a_commit_off_the_branch_as_fact_add_does(world: dict[str, Any]) -> None:  # noqa: F811
    vault, f1, c0 = world["vault"], world["f1"], world["c0"]
    ok("--vault", vault, "fact", "add", "Alpha pools 10.", "--topic", "project-alpha", "--id", "fact-pool")
    pair = ("--repo", "project-alpha", "--branch", "main", "--commit", f1[:8])
    code, _, add_err = am("--vault", vault, "fact", "add", "Alpha pools 10.", "--topic", "project-alpha", *pair)
    assert code == 13
    for command in (("slice",), ("why", "fact-pool"), ("stale",)):
        code, out, err = am("--vault", vault, *command, *pair)
        assert code == 13, (command, out, err)
        message = f"commit {f1[:10]} is not on branch 'main' of project-alpha"
        assert message in err and message in add_err and f"git branch --contains {f1[:10]}" in err, err
    # A commit that is on the branch (an older one) still names the world; the tip is the branch.
    pack = ok("--vault", vault, "slice", "--repo", "project-alpha", "--branch", "main", "--commit", c0[:8])
    assert "@ main" in pack or "main" in pack.split("\n", 3)[2]
    ok("--vault", vault, "slice", "--repo", "project-alpha", "--branch", "feat", "--commit", f1[:8])
    ok("--vault", vault, "slice", "--repo", "project-alpha", "--commit", f1[:8])  # a commit alone: its own world


def test_fact_list_refuses_filters_that_name_nothing(world: dict[str, Any]) -> None:  # noqa: F811
    vault = world["vault"]
    ok("--vault", vault, "fact", "add", "Alpha pools 10.", "--topic", "project-alpha", "--repo", "project-alpha",
       "--branch", "main")
    before = head(vault)
    code, _, err = am("--vault", vault, "fact", "list", "--repo", "project-alpah")
    assert code == 13 and "did you mean 'project-alpha'" in err, err
    code, _, slice_err = am("--vault", vault, "slice", "--repo", "project-alpah")
    assert err == slice_err  # the same words as am slice
    code, _, err = am("--vault", vault, "fact", "list", "--branch", "mian")
    assert code == 13 and "did you mean 'main'" in err, err
    code, _, err = am("--vault", vault, "fact", "list", "--repo", "project-alpha", "--branch", "mian")
    assert code == 13 and "did you mean 'main'" in err, err
    code, _, err = am("--vault", vault, "fact", "list", "--topic", "project-alhpa")
    assert code == 4 and "unknown topic 'project-alhpa'" in err and "did you mean 'project-alpha'" in err, err
    code, _, err = am("--vault", vault, "fact", "list", "--topic", "nope")
    assert code == 4 and "unknown topic 'nope'" in err, err
    # Names that exist but match nothing are not typos: an empty list, exit 0.
    code, out, err = am("--vault", vault, "fact", "list", "--branch", "feat")  # a branch of the clone
    assert code == 0 and "no facts match" in err, err
    code, out, err = am("--vault", vault, "fact", "list", "--topic", "project-alpha", "--status", "expired")
    assert code == 0 and "no facts match" in err, err
    assert ok("--vault", vault, "fact", "list", "--branch", "main").count("Alpha pools 10.") == 1
    assert head(vault) == before


def test_relation_list_refuses_a_record_that_does_not_exist(world: dict[str, Any]) -> None:  # noqa: F811
    vault = world["vault"]
    code, _, err = am("--vault", vault, "relation", "list", "--topic", "project-alhpa")
    assert code == 4 and "did you mean 'project-alpha'" in err, err
    code, out, err = am("--vault", vault, "relation", "list", "--topic", "project-alpha")
    assert code == 0 and out == "", err


def test_search_refuses_an_unknown_repo_topic_and_branch(world: dict[str, Any]) -> None:  # noqa: F811
    vault = world["vault"]
    code, _, err = am("--vault", vault, "search", "pools", "--repo", "project-alpah")
    assert code == 13 and "did you mean 'project-alpha'" in err, err
    code, _, err = am("--vault", vault, "search", "pools", "--topic", "project-alhpa")
    assert code == 4 and "did you mean 'project-alpha'" in err, err
    code, _, err = am("--vault", vault, "search", "pools", "--repo", "project-alpha", "--branch", "mian")
    assert code == 13 and "did you mean 'main'" in err, err
