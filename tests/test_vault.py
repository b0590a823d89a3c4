"""The Vault facade: every mutation is one commit touching only its records, checked with the git CLI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
from conftest import fsck_clean, run_git

from am.errors import (
    CollisionError,
    DirtyFileError,
    GitError,
    InvalidIdError,
    InvalidRecordError,
    NotAVaultError,
    NotFoundError,
    UsageError,
)
from am.records.codec import render_record
from am.records.model import Fact, Relation, Topic
from am.records.schemas import check_record
from am.upkeep.check import check_vault
from am.vault import Vault

Git = Callable[..., str]


def _head(git: Git) -> str:
    return git("rev-parse", "HEAD").strip()


def _count(git: Git) -> int:
    return int(git("rev-list", "--count", "HEAD"))


def _files_of(git: Git, rev: str = "HEAD") -> set[str]:
    return {line for line in git("show", "--name-only", "--format=", rev).splitlines() if line}


def _trailer(git: Git, key: str, rev: str = "HEAD") -> list[str]:
    out = git("log", "-1", f"--format=%(trailers:key={key},valueonly)", rev)
    return [line for line in out.splitlines() if line]


def _assert_valid_vault(root: Path) -> int:
    vault = Vault.open(root, actor="checker")
    count = 0
    for path, record in vault.iter_records(strict=True):
        check_record(record, path=str(path))
        count += 1
    return count


def test_init_makes_one_commit_and_registers(vault: Vault, git: Git, am_home: Path) -> None:
    assert _count(git) == 1
    assert _files_of(git) == {".am/vault.yml", ".gitignore"}
    assert ".am/cache/" in (vault.root / ".gitignore").read_text()
    assert "test:" in (am_home / "registry.yml").read_text()
    assert _trailer(git, "Am-Op") == ["vault.init"]
    assert Vault.open("test").root == vault.root
    # Adopting it again changes nothing.
    Vault.init(vault.root, name="test")
    assert _count(git) == 1


def test_init_adopts_an_existing_repository(tmp_path: Path) -> None:
    repo = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / ".gitignore").write_text("*.pyc")
    (repo / "README").write_text("hello\n")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "first")
    Vault.init(repo, name="adopted", actor="tester")
    assert run_git(repo, "show", "HEAD:.gitignore") == "*.pyc\n.am/cache/\n"
    assert int(run_git(repo, "rev-list", "--count", "HEAD")) == 2
    assert run_git(repo, "status", "--porcelain") == ""


def test_init_with_a_taken_name_creates_nothing(vault: Vault, tmp_path: Path) -> None:
    # It used to make the repository and its first commit, then refuse the name; run again with
    # another --name, it adopted that half-made vault and refused its recorded name once more.
    new, plain = tmp_path / "new", tmp_path / "plain"
    run_git(tmp_path, "init", "-q", "-b", "main", str(plain))
    for path in (new, plain):
        with pytest.raises(CollisionError) as err:
            Vault.init(path, name="test")
        assert "'test' is already registered" in str(err.value) and "choose another name" in str(err.value)
    assert not new.exists()
    assert not (plain / ".am").exists() and run_git(plain, "rev-list", "--all") == ""
    assert Vault.init(new, name="other").name == "other"
    assert Vault.open("other").root == new.resolve()


def test_every_mutation_is_exactly_one_commit(vault: Vault, git: Git) -> None:
    start = _count(git)
    steps: list[tuple[str, set[str], list[str]]] = []

    def step(op: str, result: object) -> None:
        paths = {str(p) for p in result.paths}  # type: ignore[attr-defined]
        ids = [r.id for r in result.records]  # type: ignore[attr-defined]
        assert _head(git) == result.commit  # type: ignore[attr-defined]
        steps.append((op, paths, ids))
        assert _count(git) == start + len(steps)
        assert _files_of(git) == paths, op
        assert _trailer(git, "Am-Op") == [op]
        assert _trailer(git, "Am-Actor") == ["tester"]
        assert set(_trailer(git, "Am-Record")) == set(ids)
        assert git("log", "-1", "--format=%an").strip() == "tester"
        assert git("status", "--porcelain") == "", op

    step("topic.add", vault.add_topic(title="Alpha service", kind="project", id="project-alpha"))
    step("topic.add", vault.add_topic(title="Redis", kind="tool"))
    first = vault.add_fact("Alpha on main only offers getUser(id).", topics=["project-alpha"],
                           repo="project-alpha", branch="main", commit="1a2b3c4", confidence="high",
                           unverified=True)
    step("fact.add", first)
    newer = vault.supersede_fact(first.record.id, "Alpha also offers getUsers(ids).", reason="batch API merged")
    step("fact.supersede", newer)
    assert newer.paths[1].name == f"{first.record.id}.md"
    step("fact.status", vault.set_fact_status(newer.record.id, "contested", reason="two sessions disagree"))
    temp = vault.add_fact("Alpha runs on port 8080.", topics=["project-alpha", "tool-redis"])
    step("fact.add", temp)
    step("fact.expire", vault.expire_fact(temp.record.id, reason="moved to 9090"))
    rel = vault.add_relation("project-alpha", "depends-on", "tool-redis", note="sessions are cached there")
    step("relation.add", rel)
    step("relation.expire", vault.expire_relation(rel.record.id, reason="moved to memcached"))
    step("fact.add", vault.add_fact("Alpha 使用 Redis 缓存会话。", topics=["project-alpha", "tool-new"],
                                    create_topics=True))
    assert len(steps[-1][1]) == 2

    assert _count(git) == start + len(steps) == start + 10
    fsck_clean(vault.root)
    assert git("log", "--merges", "--format=%H") == ""
    # The files say what happened.
    old = vault.get_fact(first.record.id)
    assert old.status == "superseded" and old.superseded_by == newer.record.id
    assert vault.get_fact(newer.record.id).supersedes == (first.record.id,)
    assert vault.get_fact(temp.record.id).status == "expired"
    assert vault.get_relation(rel.record.id).status == "expired"
    assert _assert_valid_vault(vault.root) == 8


def _am_commits(git: Git) -> list[str]:
    return git("log", "--format=%H", "--grep=^Am-Op: ", "--", "topics", "facts", "relations").split()


def test_git_revert_of_any_independent_commit_applies_and_leaves_a_valid_vault(
        alpha: Vault, git: Git, tmp_path: Path) -> None:
    vault = alpha
    vault.add_topic(title="Redis", kind="tool")
    a = vault.add_fact("fact a", topics=["project-alpha"])
    b = vault.add_fact("fact b", topics=["tool-redis"])
    vault.supersede_fact(a.record.id, "fact a2", reason="changed")
    vault.set_fact_status(b.record.id, "pending-review")
    rel = vault.add_relation("project-alpha", "depends-on", "tool-redis")
    vault.expire_relation(rel.record.id)
    vault.add_relation("tool-redis", "part-of", "project-alpha")
    commits = _am_commits(git)
    assert len(commits) == 9
    # Undo one write: every commit whose files no later commit touched.
    touched_later: set[str] = set()
    for sha in commits:  # newest first
        files = _files_of(git, sha)
        if not files & touched_later:
            clone = tmp_path / f"clone-{sha[:8]}"
            run_git(tmp_path, "clone", "-q", str(vault.root), str(clone))
            run_git(clone, "revert", "--no-edit", sha)
            assert run_git(clone, "status", "--porcelain") == ""
            assert _assert_valid_vault(clone) >= 1
            fsck_clean(clone)
        touched_later |= files
    # And undo them all, newest first: each revert applies cleanly.
    for sha in commits:
        git("revert", "--no-edit", sha)
        assert git("status", "--porcelain") == ""
        _assert_valid_vault(vault.root)
    assert not list(Vault.open(vault.root).iter_record_paths())
    fsck_clean(vault.root)


def test_external_commit_right_after_a_write_keeps_ams_file(alpha: Vault, git: Git) -> None:
    result = alpha.add_fact("kept", topics=["project-alpha"])
    path = str(result.paths[0])
    # Git's index entry is right: nothing to stage, and a hand commit keeps the file.
    assert git("diff", "--cached", "--name-only") == ""
    assert git("ls-files", "--stage", path).split()[1] == git("rev-parse", f"HEAD:{path}").strip()
    (alpha.root / "notes.txt").write_text("mine\n")
    git("add", "-A")
    git("commit", "-q", "-m", "hand commit")
    assert _files_of(git) == {"notes.txt"}
    assert git("ls-tree", "--name-only", "HEAD", path).strip() == path
    assert git("status", "--porcelain") == ""
    # And `git status` does not need to rehash am's file (stat data recorded).
    assert git("diff-files", "--name-only") == ""


def test_an_open_vault_finds_a_fact_renamed_by_hand_within_the_second(alpha: Vault, git: Git) -> None:
    """A long-lived vault (an MCP server's) refreshes its cache at most once a second: a fact moved by hand
    (git mv, Obsidian's readable names) within that second was looked up at its old path, and did not exist."""
    alpha.add_fact("Alpha uses Redis.", topics=["project-alpha"], id="fact-redis")
    assert alpha.locate("fact-redis") is not None  # the cache is open and fresh
    old = alpha.locate("fact-redis")
    run_git(alpha.root, "mv", str(old), "facts/Alpha uses Redis.md")
    run_git(alpha.root, "commit", "-q", "-m", "a readable name")
    assert str(alpha.locate("fact-redis")) == "facts/Alpha uses Redis.md"
    alpha.set_fact_status("fact-redis", "contested", reason="saw otherwise")
    assert "status: contested" in (alpha.root / "facts" / "Alpha uses Redis.md").read_text()
    assert run_git(alpha.root, "status", "--porcelain").strip() == ""


def test_a_fact_superseded_on_its_branch_only_is_not_superseded_twice(alpha: Vault, git: Git) -> None:
    # A supersede on another branch leaves the old fact active (per-world supersession) with its
    # superseded_by set; a second supersede used to overwrite that pointer, and am check then
    # failed with a half-supersession the vault had been left in.
    old = alpha.add_fact("Alpha only offers getUser(id).", topics=["project-alpha"], repo="project-alpha",
                         branch="main", commit="1a2b3c4", unverified=True).record.id
    first = alpha.supersede_fact(old, "Alpha offers getUsers(ids) too.", reason="batch API", branch="feat-batch",
                                 commit="5d6e7f8", unverified=True).record.id
    assert alpha.get_fact(old).status == "active" and alpha.get_fact(old).superseded_by == first
    head = _head(git)
    with pytest.raises(UsageError) as err:
        alpha.supersede_fact(old, "Alpha offers getUserById(id).", reason="renamed on main")
    assert f"superseded by {first}" in str(err.value) and "am fact expire" in str(err.value)
    assert _head(git) == head and git("status", "--porcelain") == ""
    assert not check_vault(alpha).errors


def test_a_person_at_the_command_line_writes_human_provenance(alpha: Vault, vault_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # No --actor and no AM_ACTOR: git's user.name is a person's, and DESIGN's default provenance is human.
    monkeypatch.delenv("AM_ACTOR", raising=False)
    person = Vault.open(vault_path)
    made = person.add_fact("Typed by hand.", topics=["project-alpha"])
    assert person.actor == "Test Person"  # git's user.name
    assert person.get_fact(made.record.id).provenance == "human"
    person.close()
    for agent in (Vault.open(vault_path, actor="claude-code"), alpha):  # an agent named by --actor
        # Each its own statement: the same one again would be the first agent's fact, already recorded.
        fact = agent.get_fact(agent.add_fact(f"Said by {agent.actor}.", topics=["project-alpha"]).record.id)
        assert fact.provenance == f"session:{agent.actor}"
    monkeypatch.setenv("AM_ACTOR", "codex")
    by_env = Vault.open(vault_path)
    assert by_env.get_fact(by_env.add_fact("Said by codex.", topics=["project-alpha"]).record.id).provenance == "session:codex"
    by_env.close()


def test_users_uncommitted_edit_is_refused_and_left_alone(alpha: Vault, git: Git) -> None:
    fact = alpha.add_fact("original", topics=["project-alpha"])
    full = alpha.root / fact.paths[0]
    edited = full.read_text() + "my edit\n"
    full.write_text(edited)
    head = _head(git)
    with pytest.raises(DirtyFileError) as err:
        alpha.set_fact_status(fact.record.id, "contested")
    assert str(fact.paths[0]) in str(err.value) and "commit or discard" in str(err.value)
    with pytest.raises(DirtyFileError):
        alpha.supersede_fact(fact.record.id, "new", reason="x")
    assert full.read_text() == edited and _head(git) == head
    # A staged edit is refused too.
    git("add", str(fact.paths[0]))
    with pytest.raises(DirtyFileError):
        alpha.expire_fact(fact.record.id, reason="x")
    assert full.read_text() == edited and _head(git) == head
    assert git("diff", "--cached", "--name-only").strip() == str(fact.paths[0])


def test_untracked_file_in_the_way_is_refused(alpha: Vault, git: Git) -> None:
    (alpha.root / "topics" / "tool-redis.md").write_text("my draft, not yet a record\n")
    head = _head(git)
    with pytest.raises((DirtyFileError, InvalidRecordError)) as err:
        alpha.add_topic(title="Redis", kind="tool")
    assert "topics/tool-redis.md" in str(err.value)
    assert (alpha.root / "topics" / "tool-redis.md").read_text() == "my draft, not yet a record\n"
    assert _head(git) == head


def test_id_collision(alpha: Vault, git: Git) -> None:
    head = _head(git)
    with pytest.raises(CollisionError) as err:
        alpha.add_topic(title="Other Alpha", kind="project", id="project-alpha")
    assert "project-alpha" in str(err.value) and "choose another id" in str(err.value)
    alpha.add_fact("one", topics=["project-alpha"], id="fact-one")
    head = _head(git)
    with pytest.raises(CollisionError):
        alpha.add_fact("two", topics=["project-alpha"], id="fact-one")
    with pytest.raises(CollisionError):
        alpha.add_fact("three", topics=["project-alpha"], id="project-alpha")
    assert _head(git) == head


def test_unknown_topic_and_relation_type(alpha: Vault, git: Git) -> None:
    head = _head(git)
    with pytest.raises(NotFoundError) as err:
        alpha.add_fact("x", topics=["project-nope"])
    assert "--create-topic" in str(err.value)
    with pytest.raises(InvalidRecordError) as err2:
        alpha.add_relation("project-alpha", "related-to", "project-alpha")
    assert "depends-on, part-of, belongs-to, authored-by, references, conflicts-with, supersedes" in str(err2.value)
    with pytest.raises(NotFoundError):
        alpha.add_relation("project-alpha", "depends-on", "tool-nope")
    assert _head(git) == head


def test_hand_edited_invalid_file_is_named_and_nothing_written(alpha: Vault, git: Git) -> None:
    path = alpha.root / "topics" / "project-alpha.md"
    path.write_text(path.read_text().replace("kind: project\n", "kind: project\nkind: tool\n"))
    git("commit", "-q", "-am", "hand edit")
    head = _head(git)
    with pytest.raises(InvalidRecordError) as err:
        alpha.add_fact("x", topics=["project-alpha"])
    assert "topics/project-alpha.md:" in str(err.value) and "duplicate key 'kind'" in str(err.value)
    with pytest.raises(InvalidRecordError):
        alpha.get_topic("project-alpha")
    assert _head(git) == head and git("status", "--porcelain") == ""


def test_a_topic_file_changed_after_a_write_is_read_again(alpha: Vault, git: Git) -> None:
    """The vault remembers a topic it found at its path only while that file is unchanged."""
    alpha.add_fact("first", topics=["project-alpha"])
    path = alpha.root / "topics" / "project-alpha.md"
    path.write_text(path.read_text().replace("kind: project\n", "kind: project\nkind: tool\n"))
    head = _head(git)
    with pytest.raises(InvalidRecordError) as err:
        alpha.add_fact("second", topics=["project-alpha"])
    assert "duplicate key 'kind'" in str(err.value)
    path.unlink()
    with pytest.raises(NotFoundError):
        alpha.add_fact("third", topics=["project-alpha"])
    assert _head(git) == head


@pytest.mark.parametrize("title", ["../x", "/etc/passwd", "C:\\x", "CON", ".git", "\u200c.git", "a\u200bb",
                                   "x" * 256, "..", "nul"])
def test_hostile_titles_stay_in_topics(alpha: Vault, git: Git, title: str) -> None:
    result = alpha.add_topic(title=title, kind="concept")
    (path,) = result.paths
    assert path.parent.as_posix() == "topics"
    assert (alpha.root / path).resolve().parent == (alpha.root / "topics").resolve()
    assert alpha.get_topic(result.record.id).title == title.strip()
    assert _files_of(git) == {str(path)}


def test_nfc_nfd_and_case_twins_collide(alpha: Vault) -> None:
    alpha.add_topic(title="Caf\u00e9", kind="concept")
    with pytest.raises(CollisionError):
        alpha.add_topic(title="Cafe\u0301", kind="concept")
    with pytest.raises(CollisionError):
        alpha.add_topic(title="CAFÉ", kind="concept")


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "CON", ".git", "Project-Alpha", "a\nb", "x" * 200])
def test_hostile_ids_refused_before_anything_is_written(alpha: Vault, git: Git, bad: str) -> None:
    head = _head(git)
    with pytest.raises(InvalidIdError):
        alpha.add_topic(title="x", id=bad)
    with pytest.raises(InvalidIdError):
        alpha.add_fact("x", topics=["project-alpha"], id=bad)
    with pytest.raises(InvalidIdError):
        alpha.add_fact("x", topics=[bad])
    assert _head(git) == head and git("status", "--porcelain") == ""


def test_symlinked_folder_is_refused(vault: Vault, git: Git, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, vault.root / "topics")
    head = _head(git)
    with pytest.raises(DirtyFileError) as err:
        vault.add_topic(title="Alpha", kind="project")
    assert "symbolic link" in str(err.value)
    assert list(outside.iterdir()) == [] and _head(git) == head


@pytest.mark.parametrize("text", [
    "line one\nAm-Actor: root\nAm-Op: vault.init",
    "nul\x00byte", "esc \x1b[31mred\x1b[0m", "bidi \u202eevil", "\n\nAm-Record: project-alpha\n",
])
def test_commit_messages_are_sanitised(alpha: Vault, git: Git, text: str) -> None:
    if "\x00" in text or "\x1b" in text:  # refused in a fact's text; a reason may still carry them
        with pytest.raises(InvalidRecordError):
            alpha.add_fact(text, topics=["project-alpha"])
    result = alpha.add_fact(text.replace("\x00", " ").replace("\x1b", " "), topics=["project-alpha"])
    alpha.set_fact_status(result.record.id, "contested", reason=text)
    alpha.expire_fact(result.record.id, reason=text)
    for rev in ("HEAD", "HEAD~1", "HEAD~2"):
        raw = git("cat-file", "commit", rev)
        message = raw.split("\n\n", 1)[1]
        assert "\x00" not in raw and "\x1b" not in raw and "\u202e" not in raw
        assert _trailer(git, "Am-Actor", rev) == ["tester"]
        assert len(_trailer(git, "Am-Op", rev)) == 1
        assert _trailer(git, "Am-Record", rev) == [result.record.id]
        assert all(not line.startswith("Am-") or line.split(":")[0] in ("Am-Op", "Am-Record", "Am-Actor")
                   for line in message.splitlines())
        # Only the lines am writes in the trailer block start with "Am-".
        lines = message.splitlines()
        assert sum(1 for line in lines if line.startswith("Am-Actor:")) == 1


@pytest.mark.parametrize("actor", ["a\nAm-Op: x", " x", "x y", "a" * 65, "-x", "x\n", "名字"])
def test_bad_actor_names_are_refused(vault_path: Path, vault: Vault, actor: str) -> None:
    with pytest.raises(UsageError):
        Vault.open(vault_path, actor=actor)


@pytest.mark.parametrize("option,fields", [
    ("--provenance", {"provenance": "human\nAm-Op: vault.init"}),
    ("--branch", {"repo": "alpha", "branch": "main\nAm-Actor: root"}),
    ("--repo", {"repo": "alpha\r", "branch": "main"}),
    ("--path", {"paths": ["src/a.py", "src/\x1b[31mb.py"]}),
    ("--tag", {"tags": ["ops\tx"]}),
    ("--provenance", {"provenance": "human\u2028x"}),
])
def test_a_one_line_value_with_a_control_character_is_refused_naming_its_option(
        alpha: Vault, git: Git, option: str, fields: dict[str, object]) -> None:
    """A branch, provenance, path or tag is one line of frontmatter: a newline in it is refused, nothing written."""
    fact = alpha.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"])
    head = _head(git)
    writes = [lambda: alpha.add_fact("Alpha runs on Kubernetes.", topics=["project-alpha"], unverified=True,
                                     **fields),
              lambda: alpha.supersede_fact(fact.record.id, "Alpha deploys on Mondays.", reason="moved",
                                           unverified=True, **fields)]
    for write in writes:
        with pytest.raises(UsageError) as err:
            write()
        assert err.value.exit_code == 2 and str(err.value).startswith(f"{option} ") and "one line" in str(err.value)
        assert f"give {option} without line breaks" in str(err.value.hint)
    assert _head(git) == head and git("status", "--porcelain") == ""
    with pytest.raises(UsageError, match="^--alias "):
        alpha.add_topic(title="Beta", aliases=["Beta\nAm-Op: x"])
    with pytest.raises(UsageError, match="^--tag "):
        alpha.add_topic(title="Beta", tags=["b\x00"])
    assert _head(git) == head


def test_a_path_out_of_the_code_repository_is_refused(alpha: Vault, git: Git) -> None:
    """--path ../etc can never match a change in the repository: refused by name, nothing written; /src is fine."""
    head = _head(git)
    for path in ("../etc/passwd", "src/../../x", "..\\win"):
        with pytest.raises(UsageError, match=r"^--path .* steps out of the code repository") as err:
            alpha.add_fact("Alpha reads its config.", topics=["project-alpha"], paths=[path])
        assert "from the repository's root" in str(err.value.hint)
    assert _head(git) == head
    alpha.add_fact("Alpha reads its config.", topics=["project-alpha"], paths=["/src/config..py", "src/a..b/"])


def test_actor_from_environment(vault_path: Path, vault: Vault, git: Git, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AM_ACTOR", "claude-code")
    v = Vault.open(vault_path)
    v.add_topic(title="Alpha", kind="project")
    assert git("log", "-1", "--format=%an|%cn").strip() == "claude-code|Test Person"
    assert _trailer(git, "Am-Actor") == ["claude-code"]


def test_a_changed_git_identity_is_used_once_its_lookup_is_a_second_old(
        alpha: Vault, git: Git, monkeypatch: pytest.MonkeyPatch) -> None:
    import am.writes.authorship
    for name in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):  # the environment comes first, as for git
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(am.writes.authorship, "_IDENTITY_FOR", 3600.0)
    alpha.add_topic(title="Before", kind="project")
    git("config", "user.email", "new@example.com")
    alpha.add_topic(title="Within the second", kind="project")
    assert git("log", "-1", "--format=%ce").strip() != "new@example.com"  # the lookup is reused
    monkeypatch.setattr(am.writes.authorship, "_IDENTITY_FOR", 0.0)
    alpha.add_topic(title="After", kind="project")
    assert git("log", "-1", "--format=%ae|%ce").strip() == "new@example.com|new@example.com"


def test_git_identity_from_the_environment_comes_first_as_for_git(vault: Vault, vault_path: Path, git: Git,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_AUTHOR_NAME/EMAIL and GIT_COMMITTER_NAME/EMAIL (a CI job's identity) win over user.name/email."""
    monkeypatch.delenv("AM_ACTOR", raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Build Bot")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "bot@ci.example")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "CI Runner")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "runner@ci.example")
    v = Vault.open(vault_path)
    v.add_topic(title="Alpha", kind="project")
    v.close()
    assert git("log", "-1", "--format=%an|%ae|%cn|%ce").strip() == "Build Bot|bot@ci.example|CI Runner|runner@ci.example"
    assert git("config", "user.name").strip() == "Test Person"


def test_not_a_vault(tmp_path: Path) -> None:
    with pytest.raises(NotAVaultError) as err:
        Vault.open(tmp_path)
    assert "am init" in str(err.value)
    with pytest.raises(NotFoundError):
        Vault.open("no-such-vault")


def test_reads_see_hand_written_records_anywhere(alpha: Vault, git: Git) -> None:
    folder = alpha.root / "topics" / "people"
    folder.mkdir()
    (folder / "Li Wei.md").write_text("---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: 李伟\n---\nHi.\n")
    git("add", "-A")
    git("commit", "-q", "-m", "written in Obsidian")
    alpha = Vault.open(alpha.root, actor="tester")  # a new invocation, as from the command line
    assert alpha.get_topic("person-li-wei").title == "李伟"
    assert [t.id for t in alpha.list_topics()] == ["person-li-wei", "project-alpha"]
    alpha.add_fact("Li Wei owns Alpha.", topics=["person-li-wei", "project-alpha"])
    assert len(alpha.list_facts(topic="person-li-wei")) == 1


def test_import_records_commits_in_batches(vault: Vault, git: Git) -> None:
    records = [Topic(id="project-alpha", kind="project", title="Alpha", created="2026-09-23T12:00:00+08:00")]
    records += [Fact(id=f"f-20260923-1200-{i:06x}", topics=("project-alpha",), body=f"fact {i}\n",
                     created="2026-09-23T12:00:00+08:00") for i in range(25)]
    records.append(Relation(id="project-alpha--references--f-20260923-1200-000000", rel="references",
                            from_="project-alpha", to="f-20260923-1200-000000", created="2026-09-23T12:00:00+08:00"))
    start = _count(git)
    # 20 files take the batch-sync path (one syncfs), the last 7 the fsync-per-file path.
    results = vault.import_records(records, source="test", batch_size=20)
    assert len(results) == 2 and _count(git) == start + 2
    assert git("diff-files", "--name-only") == ""
    assert len(git("ls-files", "facts").split()) == 25
    assert _trailer(git, "Am-Op") == ["import.batch"]
    assert git("status", "--porcelain") == ""
    for record in records:
        on_disk = vault.get(record.id)[1]
        assert render_record(on_disk) == render_record(record)
    fsck_clean(vault.root)


def test_cli_git_sees_fsync_durable_objects_after_kill(alpha: Vault, tmp_path: Path) -> None:
    """A write acknowledged by a process that is then killed is in HEAD (nothing buffered)."""
    script = (
        "import os, signal, sys\n"
        "from am.vault import Vault\n"
        f"v = Vault.open({str(alpha.root)!r}, actor='killer')\n"
        "r = v.add_fact('acknowledged', topics=['project-alpha'])\n"
        "print(r.record.id, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    from conftest import PYTHON, subprocess_env

    proc = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, env=subprocess_env())
    fact_id = proc.stdout.strip()
    assert fact_id.startswith("f-")
    assert fact_id in run_git(alpha.root, "log", "-1", "--format=%B")
    assert run_git(alpha.root, "status", "--porcelain") == ""
    fsck_clean(alpha.root)


@pytest.mark.parametrize("corrupt,needle", [
    (lambda t: t.replace("kind: project\n", "kind: &k project\nx: *k\n"), "aliases"),
    (lambda t: t.replace("kind: project\n", "kind: !!python/object/apply:os.system ['touch /tmp/pwned']\n"), "tag"),
    (lambda t: t.replace("kind: project\n", "kind: project\ntitle: " + "x" * 70_000 + "\n"), "KiB"),
    (lambda t: t.replace("kind: project\n", "kind: [unclosed\n"), "invalid YAML"),
    # A long plain key takes the fast loader, which had no size cap: accepted in LF, refused in CRLF.
    (lambda t: t.replace("kind: project\n", "kind: project\n" + "x" * 200_000 + ": 1\n"), "KiB"),
    # Past Python's 4,300-digit limit for int(): the fast loader raised ValueError (a traceback in every command).
    (lambda t: t.replace("kind: project\n", "kind: project\nx: " + "9" * 5000 + "\n"), "not a valid int"),
    (lambda t: t.replace("---\n", "", 1), "---"),
])
def test_hostile_yaml_in_a_hand_edited_file(alpha: Vault, git: Git, corrupt: Callable[[str], str],
                                            needle: str) -> None:
    path = alpha.root / "topics" / "project-alpha.md"
    path.write_text(corrupt(path.read_text()))
    git("commit", "-q", "-am", "hand edit")
    head = _head(git)
    with pytest.raises(InvalidRecordError) as err:
        alpha.add_fact("x", topics=["project-alpha"])
    assert "topics/project-alpha.md" in str(err.value) and needle in str(err.value)
    assert _head(git) == head and git("status", "--porcelain") == ""


def test_bad_utf8_and_bom_in_hand_edited_files(alpha: Vault, git: Git) -> None:
    path = alpha.root / "topics" / "project-alpha.md"
    good = path.read_bytes()
    path.write_bytes(good.replace(b"Alpha service", b"Alpha \xff service"))
    git("commit", "-q", "-am", "bad bytes")
    with pytest.raises(InvalidRecordError) as err:
        alpha.get_topic("project-alpha")
    assert "topics/project-alpha.md:" in str(err.value) and "UTF-8" in str(err.value)
    path.write_bytes(b"\xef\xbb\xbf" + good)
    git("commit", "-q", "-am", "bom")
    assert alpha.get_topic("project-alpha").title == "Alpha service"


def test_crlf_file_keeps_crlf_when_am_rewrites_it(alpha: Vault, git: Git) -> None:
    fact = alpha.add_fact("line endings", topics=["project-alpha"])
    path = alpha.root / fact.paths[0]
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    git("commit", "-q", "-am", "edited on Windows")
    alpha.set_fact_status(fact.record.id, "contested")
    data = path.read_bytes()
    assert b"status: contested\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    # The commit holds exactly these bytes (text mode would hide the CRs, so compare blob ids).
    assert git("rev-parse", f"HEAD:{fact.paths[0]}").strip() == git("hash-object", str(fact.paths[0])).strip()


def test_a_crlf_fact_s_edited_text_gets_crlf_too(alpha: Vault, git: Git) -> None:
    fact = alpha.add_fact("line endings", topics=["project-alpha"])
    path = alpha.root / fact.paths[0]
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    git("commit", "-q", "-am", "edited on Windows")
    alpha.edit_fact(fact.record.id, "line endings, two lines\nof them")
    data = path.read_bytes()
    # Before: the frontmatter kept CRLF and the new text was LF (one file, two kinds of line end).
    assert data.endswith(b"two lines\r\nof them\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    assert alpha.get_fact(fact.record.id).body.replace("\r\n", "\n") == "line endings, two lines\nof them\n"


@pytest.mark.parametrize("crlf", [False, True])
def test_a_bom_is_kept_when_am_rewrites_the_file(alpha: Vault, git: Git, crlf: bool) -> None:
    fact = alpha.add_fact("byte order", topics=["project-alpha"])
    path = alpha.root / fact.paths[0]
    data = path.read_bytes().replace(b"\n", b"\r\n") if crlf else path.read_bytes()
    path.write_bytes(b"\xef\xbb\xbf" + data)
    git("commit", "-q", "-am", "saved by an editor that writes a BOM")
    alpha.set_fact_status(fact.record.id, "contested")
    alpha.pin_fact(fact.record.id)
    blob = subprocess.run(["git", "-C", str(alpha.root), "cat-file", "blob", f"HEAD:{fact.paths[0]}"],
                          capture_output=True, check=True).stdout
    assert blob.startswith(b"\xef\xbb\xbf---") and blob.count(b"\xef\xbb\xbf") == 1
    assert b"status: contested" in blob and b"pinned: true" in blob
    assert (b"\n" not in blob.replace(b"\r\n", b"")) if crlf else (b"\r" not in blob)
    assert alpha.get_fact(fact.record.id).status == "contested" and check_vault(alpha).errors == []


def test_git_s_cached_trees_never_go_stale_across_am_and_hand_commits(alpha: Vault, git: Git) -> None:
    # A hand commit leaves a TREE extension in Git's index; am's index writer must
    # invalidate it along each path it writes, or `git commit` would reuse old trees.
    for n in range(3):
        (alpha.root / f"note-{n}.txt").write_text(f"{n}\n")
        git("add", "-A")
        git("commit", "-q", "-m", f"hand {n}")
        alpha.add_fact(f"after hand commit {n}", topics=["project-alpha"])
        alpha.add_topic(title=f"Topic {n}", id=f"topic-{n}")
        assert git("write-tree").strip() == git("rev-parse", "HEAD^{tree}").strip()
        assert git("status", "--porcelain") == ""
        assert git("diff-files") == ""
    (alpha.root / "last.txt").write_text("last\n")
    git("add", "last.txt")
    git("commit", "-q", "-m", "last hand commit")
    assert git("diff", "--name-status", "HEAD~1", "HEAD") == "A\tlast.txt\n"
    fsck_clean(alpha.root)


def test_a_generated_fact_id_another_writer_drew_is_drawn_again(alpha: Vault, git: Git,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import am.writes.facts

    draws = iter(["f-20261129-1200-aaaaaa", "f-20261129-1200-aaaaaa", "f-20261129-1200-bbbbbb"])
    monkeypatch.setattr(am.writes.facts, "new_fact_id", lambda now: next(draws))
    monkeypatch.setenv("AM_NOW", "2026-11-29T12:00:00+00:00")
    first = alpha.add_fact("First writer's fact.", topics=["project-alpha"])
    before = _count(git)
    second = alpha.add_fact("Second writer drew the same id.", topics=["project-alpha"])
    assert (first.record.id, second.record.id) == ("f-20261129-1200-aaaaaa", "f-20261129-1200-bbbbbb")
    assert _count(git) == before + 1  # the refused draw left no commit behind
    assert "First writer" in (alpha.root / first.paths[0]).read_text()
    assert git("status", "--porcelain") == ""


def test_a_given_fact_id_that_is_taken_is_refused_not_redrawn(alpha: Vault) -> None:
    alpha.add_fact("One.", topics=["project-alpha"], id="fact-mine")
    with pytest.raises(CollisionError):
        alpha.add_fact("Two.", topics=["project-alpha"], id="fact-mine")


def test_consecutive_am_writes_keep_git_s_cached_trees_right(alpha: Vault, git: Git) -> None:
    # One hand commit leaves a TREE extension; then am writes several times in a row
    # from its kept index (whose unchanged subtrees reuse their bytes).
    (alpha.root / "note.txt").write_text("n\n")
    git("add", "note.txt")
    git("commit", "-q", "-m", "hand")
    for n in range(4):
        alpha.add_fact(f"In a row {n}", topics=["project-alpha"])
        if n % 2:
            alpha.add_topic(title=f"Row topic {n}", id=f"topic-row-{n}")
        assert git("write-tree").strip() == git("rev-parse", "HEAD^{tree}").strip()
    assert git("status", "--porcelain") == "" and git("diff-files") == ""
    fsck_clean(alpha.root)


def _conflicted(root: Path, op: str) -> None:
    """Leave Git's ``op`` stopped on a conflict in a plain file of the vault at ``root``."""
    def commit(text: str, message: str) -> None:
        (root / "notes.txt").write_text(text)
        run_git(root, "add", "notes.txt")
        run_git(root, "commit", "-q", "-m", message)

    here = run_git(root, "branch", "--show-current").strip()
    commit("base\n", "base")
    run_git(root, "switch", "-q", "-c", f"{here}-other")
    commit("theirs\n", "theirs")
    run_git(root, "switch", "-q", here)
    commit("ours\n", "ours")
    commit("ours again\n", "ours again")
    args = {"merge": ["merge", f"{here}-other"], "cherry-pick": ["cherry-pick", f"{here}-other"],
            "revert": ["revert", "--no-edit", "HEAD~1"], "rebase": ["rebase", f"{here}-other"],
            "rebase --apply": ["rebase", "--apply", f"{here}-other"]}[op]
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert proc.returncode != 0 and "CONFLICT" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("op,state,abort", [
    ("merge", "MERGE_HEAD", "git merge --abort"),
    ("cherry-pick", "CHERRY_PICK_HEAD", "git cherry-pick --abort"),
    ("revert", "REVERT_HEAD", "git revert --abort"),
    ("rebase", "rebase-merge", "git rebase --abort"),
    ("rebase --apply", "rebase-apply", "git rebase --abort"),
])
def test_no_write_in_the_middle_of_an_unfinished_git_operation(alpha: Vault, vault_path: Path, op: str, state: str,
                                                                abort: str) -> None:
    from am.sync import merge_branch

    run_git(vault_path, "branch", "agent")
    _conflicted(vault_path, op)
    before = (run_git(vault_path, "rev-parse", "HEAD"), run_git(vault_path, "status", "--porcelain=v2"))
    for write in (lambda: alpha.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"]),
                  lambda: alpha.add_topic(title="Redis", kind="tool", id="tool-redis"),
                  lambda: merge_branch(alpha, "agent")):
        with pytest.raises(GitError) as err:
            write()
        assert f"a git {op.split()[0]}" in str(err.value) and state in str(err.value)
        assert abort in str(err.value.hint) and "then run the command again" in str(err.value.hint)
        assert (run_git(vault_path, "rev-parse", "HEAD"), run_git(vault_path, "status", "--porcelain=v2")) == before
    assert (vault_path / ".git" / state).exists()  # the operation is left to the person, as it was
    run_git(vault_path, *abort.split()[1:])
    assert alpha.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"]).commit == run_git(
        vault_path, "rev-parse", "HEAD").strip()


def test_an_unfinished_merge_in_a_linked_worktree_refuses_writes_there_only(alpha: Vault, vault_path: Path,
                                                                           tmp_path: Path) -> None:
    run_git(vault_path, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    _conflicted(tmp_path / "side", "merge")
    assert not (vault_path / ".git" / "MERGE_HEAD").exists()  # in the worktree's own Git folder
    with Vault.open(tmp_path / "side") as side:
        with pytest.raises(GitError, match="a git merge is in progress"):
            side.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"])
    # The check before a sync or merge starts is given the work tree's .git, a file there: it is followed.
    from am.git.checks import check_no_git_operation

    with pytest.raises(GitError, match="a git merge is in progress"):
        check_no_git_operation(tmp_path / "side" / ".git")
    assert alpha.add_fact("Alpha deploys on Mondays.", topics=["project-alpha"]).commit


def test_a_fact_already_recorded_writes_nothing_and_returns_the_one_recorded(alpha: Vault, git: Git) -> None:
    """A fact add that repeats a holding fact (same text up to whitespace, topics, repo and branch) is no error
    and no commit: it returns the fact found, created False (docs/decisions/writes.md, "A fact said twice is recorded once")."""
    alpha.add_topic(title="Redis", kind="tool", id="tool-redis")
    first = alpha.add_fact("Alpha keeps sessions in Redis.", topics=["project-alpha", "tool-redis"])
    head, count = _head(git), _count(git)
    again = alpha.add_fact("  Alpha keeps\n sessions   in Redis. ", topics=["tool-redis", "project-alpha"])
    assert (again.created, again.commit, again.record.id, again.paths) == (False, "", first.record.id, first.paths)
    assert again.note is not None and "am fact supersede" in again.note
    # Another vault object (another process) finds it too, and so does a retry with the id the first call gave.
    other = Vault.open(alpha.root, actor="other")
    assert other.add_fact("Alpha keeps sessions in Redis.", topics=["project-alpha", "tool-redis"]).created is False
    assert other.add_fact("Alpha keeps sessions in Redis.", topics=["project-alpha", "tool-redis"],
                          id=first.record.id).created is False
    other.close()
    assert (_head(git), _count(git), git("status", "--porcelain")) == (head, count, "")
    # Since issue 34 a restatement is the same fact: case and punctuation aside, or said of fewer of its topics.
    assert not alpha.add_fact("alpha keeps sessions in redis", topics=["project-alpha", "tool-redis"]).created
    assert not alpha.add_fact("Alpha keeps sessions in Redis.", topics=["project-alpha"]).created
    # A topic it does not share is another fact's.
    alpha.add_topic(title="Beta", kind="project", id="project-beta")
    assert alpha.add_fact("Alpha keeps sessions in Redis.", topics=["project-beta"]).created
    assert _count(git) == count + 2


def test_an_ended_fact_said_again_is_a_new_fact_and_a_pending_one_is_not(alpha: Vault, git: Git) -> None:
    old = alpha.add_fact("Alpha runs on Python 3.10.", topics=["project-alpha"]).record.id
    alpha.supersede_fact(old, "Alpha runs on Python 3.12.", reason="upgraded")
    back = alpha.add_fact("Alpha runs on Python 3.10.", topics=["project-alpha"])  # re-learnt after a rollback
    assert back.created and back.record.id != old
    alpha.expire_fact(back.record.id, reason="gone again")
    assert alpha.add_fact("Alpha runs on Python 3.10.", topics=["project-alpha"]).created
    # A proposal waiting for review, or a contested fact, still stands: the same statement is not added twice.
    pending = alpha.add_fact("Alpha retries twice.", topics=["project-alpha"]).record.id
    alpha.set_fact_status(pending, "pending-review")
    count = _count(git)
    again = alpha.add_fact("Alpha retries twice.", topics=["project-alpha"])
    assert (again.created, again.record.id) == (False, pending)
    assert again.note == f"it waits for review; accept it with: am review accept {pending}"
    alpha.set_fact_status(pending, "contested")
    assert alpha.add_fact("Alpha retries twice.", topics=["project-alpha"]).created is False
    assert _count(git) == count + 1


def test_a_duplicate_is_per_repo_and_branch_and_points_at_confirm(alpha: Vault, git: Git, tmp_path: Path) -> None:
    from conftest import commit_file

    from am.registry import Registry

    code = tmp_path / "alpha-code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    first = commit_file(code, "a.txt")
    run_git(code, "branch", "feat")
    Registry.load().add_repo("project-alpha", code)
    fact = alpha.add_fact("getUser takes an id.", topics=["project-alpha"], repo="project-alpha", branch="main")
    assert fact.record.commit == first  # type: ignore[attr-defined]
    count = _count(git)
    same = alpha.add_fact("getUser takes an id.", topics=["project-alpha"], repo="project-alpha", branch="main")
    assert same.created is False
    assert same.note == f"nothing to do; to change it: am fact supersede {fact.record.id} TEXT --reason ..."
    later = commit_file(code, "b.txt")
    moved = alpha.add_fact("getUser takes an id.", topics=["project-alpha"], repo="project-alpha", branch="main")
    assert moved.created is False
    assert moved.note == f"to record that it still holds at {later[:10]}: am fact confirm {fact.record.id} --commit {later}"
    assert _count(git) == count
    # Another branch, no branch, or no repo: other worlds, other facts.
    assert alpha.add_fact("getUser takes an id.", topics=["project-alpha"], repo="project-alpha", branch="feat").created
    assert alpha.add_fact("getUser takes an id.", topics=["project-alpha"], repo="project-alpha").created
    assert alpha.add_fact("getUser takes an id.", topics=["project-alpha"]).created
    assert _count(git) == count + 3


def test_the_duplicate_check_reads_the_files_when_the_cache_cannot_be_used(alpha: Vault, git: Git,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    first = alpha.add_fact("Alpha logs to stdout.", topics=["project-alpha"])
    count = _count(git)
    from am.cache.recordfiles import RecordFiles

    monkeypatch.setattr(RecordFiles, "cache", lambda self: None)
    again = alpha.add_fact("Alpha logs  to stdout.", topics=["project-alpha"])
    assert (again.created, again.record.id, _count(git)) == (False, first.record.id, count)


def test_adds_of_one_statement_at_once_write_one_fact(alpha: Vault, git: Git) -> None:
    """Each add holds its statement's lock from the check to the commit (a retry racing the first call)."""
    import threading

    count = _count(git)
    results: list[object] = []

    def add() -> None:
        with Vault.open(alpha.root, actor="racer") as racer:
            results.append(racer.add_fact("Alpha pages on-call after 5 errors.", topics=["project-alpha"]))

    threads = [threading.Thread(target=add) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.created for r in results) == [False] * 5 + [True]  # type: ignore[attr-defined]
    assert len({r.record.id for r in results}) == 1  # type: ignore[attr-defined]
    assert _count(git) == count + 1


def test_a_new_topic_may_not_take_a_name_that_links_reach_another_record_by(vault: Vault, git: Git) -> None:
    """A fact written by hand (Obsidian) names its topic "[[Redis]]"; an agent's topic titled Redis, whose
    path sorts first, would silently take that fact over: refused, naming the owner; nothing written."""
    vault.add_topic(title="Redis", kind="tool", id="tool-redis", aliases=("Cache",))
    fact = "facts/2026/12/01/fact-hand.md"
    (vault.root / fact).parent.mkdir(parents=True)
    (vault.root / fact).write_text("---\ntype: fact\nid: fact-hand\ntopics: [\"[[Redis]]\"]\nstatus: active\n"
                                   "confidence: high\nprovenance: human\ncreated: 2026-12-01T10:00:00+00:00\n---\n"
                                   "Redis holds the sessions.\n")
    git("add", fact)
    git("commit", "-q", "-m", "by hand")
    vault.cache().refresh()  # a commit by hand in the same second as the vault's own write
    head = git("rev-parse", "HEAD")
    for fields, said in [({"title": "redis"}, "title 'redis' is already a name of tool-redis"),
                         ({"title": "Other", "aliases": ("cache",)}, "alias 'cache' is already a name of tool-redis"),
                         ({"title": "Other", "aliases": ("tool-redis",)}, "alias 'tool-redis'")]:
        with pytest.raises(CollisionError, match=said):
            vault.add_topic(kind="tool", id="tool-redis-cache", **fields)
    assert git("rev-parse", "HEAD") == head
    assert [f.id for f in vault.list_facts(topic="tool-redis")] == ["fact-hand"]
    vault.add_topic(title="Redis Cluster", kind="tool", id="tool-redis-cluster")  # a name of its own is fine
    # With readable names a title becomes the file name, the strongest name: '#Redis' would be topics/Redis.md.
    with (vault.root / ".am" / "vault.yml").open("a") as settings:
        settings.write("readable_names: true\n")
    git("commit", "-q", "-am", "readable names")
    with Vault.open(vault.root) as readable:
        with pytest.raises(CollisionError, match="file name 'Redis' is already a name of tool-redis.*another title"):
            readable.add_topic(title="#Redis", kind="tool", id="tool-hash-redis")
        added = readable.add_topic(title="Redis Sentinel", kind="tool")
        assert added.paths == (PurePosixPath("topics/Redis Sentinel.md"),)


def test_a_fact_id_may_not_take_a_name_that_links_reach_a_topic_by(vault: Vault, git: Git) -> None:
    """A fact with id 'redis' (file redis.md) outranks the title Redis: a hand-written "[[Redis]]" topic would
    name a fact, and am check fail on a file the agent never touched."""
    vault.add_topic(title="Redis", kind="tool", id="tool-redis")
    head = git("rev-parse", "HEAD").strip()
    for add in (lambda: vault.add_fact("A fact.", topics=["tool-redis"], id="redis"),
                lambda: vault.supersede_fact(vault.add_fact("Old.", topics=["tool-redis"]).records[0].id, "New.",
                                             reason="r", id="redis")):
        with pytest.raises(CollisionError, match="id 'redis' is already a name of tool-redis"):
            add()
    with pytest.raises(CollisionError, match="id 'redis' is already a name of tool-redis"):
        vault.add_fact("A fact about a topic made for it.", topics=["redis"], create_topics=True)
    assert "/redis.md" not in git("ls-files")
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"  # the old fact only
    assert check_vault(vault).errors == []
