"""Obsidian, natively: property links, a file's own form, names, notes, fact edit, setup, hooks that survive."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from am.cli.main import cli
from am.records.codec import parse_record, render_record, render_update
from am.records.links import parse_links
from am.records.model import Fact
from am.records.names import Names
from am.records.properties import property_links, update_frontmatter
from am.records.schemas import check_record, schema_problems
from am.upkeep.check import check_texts

from conftest import GIT_IDENTITY, REPO_ROOT, run_git


def am(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


HAND = """---
type: fact
id: fact-hand
# written in Obsidian
topics:
  - "[[project-alpha|Alpha]]"
  - "[[Li Wei]]"
status: active
confidence: high
provenance: human
created: 2026-11-02T09:00:00+00:00
---
Alpha is owned by Li Wei.
"""


def test_both_list_forms_and_every_link_shape_are_read() -> None:
    fact = parse_record(HAND, "facts/x.md")
    assert isinstance(fact, Fact) and fact.topics == ("project-alpha", "[[Li Wei]]")
    flow = HAND.replace('topics:\n  - "[[project-alpha|Alpha]]"\n  - "[[Li Wei]]"',
                        'topics: ["[[project-alpha|Alpha]]", "[[Li Wei]]"]')
    assert parse_record(flow, "facts/x.md") == parse_record(HAND, "facts/x.md").__class__(
        **{**fact.__dict__, "eol": "\n"})
    check_record(fact, path="facts/x.md")
    from am.records.frontmatter import strict_load

    meta = strict_load(HAND.split("---\n")[1])
    assert schema_problems(meta) == []  # the JSON Schema takes an id or a whole wikilink
    assert [f for f, _ in schema_problems({**meta, "topics": ["Li Wei"]})] == ["topics.0"]  # a bare name is not
    assert list(property_links(meta)) == [("topics", "project-alpha", None), ("topics", "Li Wei", None)]


def test_a_changed_file_keeps_its_form_and_an_unchanged_key_its_bytes() -> None:
    fact = parse_record(HAND, "facts/x.md")
    assert isinstance(fact, Fact)
    from am.records.model import replace

    expired = replace(fact, status="expired", reason="moved")
    text = render_update(HAND, expired)
    assert '# written in Obsidian\ntopics:\n  - "[[project-alpha|Alpha]]"\n  - "[[Li Wei]]"\n' in text
    assert "status: expired\n" in text and "reason: moved\n" in text and text.endswith("Alpha is owned by Li Wei.\n")
    retopic = replace(fact, topics=("project-beta", "[[Li Wei]]"))
    moved = render_update(HAND, retopic)
    assert 'topics:\n  - "[[project-beta]]"\n  - "[[Li Wei]]"\n' in moved  # block form and link style kept
    assert parse_record(moved, "x.md").topics == ("project-beta", "[[Li Wei]]")  # type: ignore[union-attr]
    canonical = render_record(fact)
    assert render_update(canonical, expired) == render_record(expired)  # am's own form stays canonical
    assert update_frontmatter("a: 1\nb: [x]\n", {"a": 1, "b": ["x"]}, {"a": 1, "b": ["x"]}) == "a: 1\nb: [x]\n"


def test_names_resolve_file_name_first_then_id_title_alias() -> None:
    names = Names()
    names.add_record("topics/people/Li Wei.md", "person-li-wei", title="Li Wei", aliases=["李伟"])
    names.add_record("topics/li-wei-notes.md", "concept-x", title="Wei", aliases=["Li Wei"])
    names.add_note("notes/Meeting.md")
    assert names.resolve("[[li wei]]") == "person-li-wei"  # file name, case-insensitive
    assert names.resolve("[[李伟]]") == "person-li-wei" and names.resolve("Wei") == "concept-x"
    assert names.resolve("[[Meeting.md]]") == "note:notes/Meeting.md"
    assert names.resolve("[[other:person-li-wei]]") is None and names.resolve("[[nobody]]") is None


def test_notes_are_never_records_and_links_to_them_are_not_dangling() -> None:
    fact = HAND.replace("Alpha is owned by Li Wei.", "See [[Untitled]] and [[Meeting]].")
    topic = ("---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\nstatus: active\n---\n")
    alpha = "---\ntype: topic\nid: project-alpha\nkind: project\ntitle: Alpha\n---\n"
    files = [("topics/Untitled.md", b""), ("topics/book.md", b"---\ntype: book\nauthor: X\n---\nA book.\n"),
             ("facts/2026/11/02/fact-hand.md", fact.encode()), ("topics/people/Li Wei.md", topic.encode()),
             ("topics/project-alpha.md", alpha.encode())]
    report = check_texts(files, notes=["notes/Meeting.md"])
    assert report.errors == [] and report.warnings == [], [i.describe() for i in report.issues]
    assert {i.path for i in report.notes} == {"topics/Untitled.md", "topics/book.md"}
    assert report.records == 3
    broken = check_texts([("topics/x.md", b"---\ntype: topc\nid: tool-x\n---\n")])
    assert [i.code for i in broken.errors] == ["schema"]  # an am id with a misspelt type is a broken record


def test_obsidian_uri_links_are_cross_vault_links() -> None:
    body = ("Alpha: [Alpha](obsidian://open?vault=team&file=topics%2Fproject-alpha.md), "
            "`[no](obsidian://open?vault=a&file=b)` and [[team:tool-redis]].\n")
    links = [(link.vault, link.target, link.label) for link in parse_links(body)]
    assert links == [("team", "project-alpha", "Alpha"), ("team", "tool-redis", None)]


def test_fact_edit_keeps_the_id_and_the_path_in_one_commit(alpha: object, vault_path: Path) -> None:
    v = ["--vault", str(vault_path)]
    am(*v, "fact", "add", "Alpha offers getUsr(id).", "--topic", "project-alpha", "--id", "fact-typo")
    before = run_git(vault_path, "rev-list", "--count", "HEAD")
    out = am(*v, "fact", "edit", "fact-typo", "Alpha offers getUser(id).")
    assert "edited fact fact-typo" in out
    assert int(run_git(vault_path, "rev-list", "--count", "HEAD")) == int(before) + 1
    diff = run_git(vault_path, "show", "--format=%s%n%b", "HEAD")
    assert "Am-Op: fact.edit" in diff and "-Alpha offers getUsr(id)." in diff and "+Alpha offers getUser(id)." in diff
    assert diff.count("\n+") - diff.count("\n+++") == 1  # one line changed: the text
    assert "getUser(id)" in am(*v, "fact", "show", "fact-typo")


def test_obsidian_setup_never_overwrites_a_persons_settings(alpha: object, vault_path: Path) -> None:
    app = vault_path / ".obsidian" / "app.json"
    app.parent.mkdir()
    app.write_text(json.dumps({"userIgnoreFilters": ["private/"], "theme": "dark"}))
    (vault_path / ".obsidian" / "core-plugins.json").write_text(json.dumps({"templates": False, "graph": True}))
    run_git(vault_path, "add", "-A")
    run_git(vault_path, "commit", "-q", "-m", "my settings")
    out = am("--vault", str(vault_path), "obsidian", "setup")
    assert "templates/am-fact.md" in out and "in commit" in out
    settings = json.loads(app.read_text())
    assert settings["userIgnoreFilters"] == ["private/"] and settings["theme"] == "dark"
    assert settings["alwaysUpdateLinks"] is True
    assert json.loads((vault_path / ".obsidian" / "core-plugins.json").read_text()) == {"templates": False,
                                                                                         "graph": True}
    assert "property_links: true" in (vault_path / ".am" / "vault.yml").read_text()
    assert "nothing to do" in am("--vault", str(vault_path), "obsidian", "setup")
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    # A template, filled in as Obsidian would, is a valid record.
    filled = (vault_path / "templates/am-fact.md").read_text().replace(
        "{{date:YYYYMMDD-HHmmss}}", "20261102-090000").replace("{{date:YYYY-MM-DDTHH:mm:ssZ}}",
                                                               "2026-11-02T09:00:00+00:00")
    record = parse_record(filled, "facts/x.md")
    check_record(record, path="facts/x.md")


def _commit(root: Path, message: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    return subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], capture_output=True, text=True,
                          env=env, check=False)


def test_hooks_survive_a_moved_virtualenv_and_say_how_to_fix_it(alpha: object, vault_path: Path,
                                                                tmp_path: Path) -> None:
    am("--vault", str(vault_path), "hooks", "install")
    hook = vault_path / ".git" / "hooks" / "pre-commit"
    for name in ("pre-commit", "post-commit"):
        path = vault_path / ".git" / "hooks" / name
        path.write_text(path.read_text().replace(sys.executable, "/nonexistent/venv/bin/python"))
    # doctor names the broken hooks
    findings = json.loads(am("--vault", str(vault_path), "doctor", "--format", "json") if False else
                          CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor", "--format", "json"]).stdout)
    kinds = {(Path(f["path"]).name, f["kind"]) for f in findings["findings"]}
    assert ("pre-commit", "hook-broken") in kinds and ("post-commit", "hook-broken") in kinds
    bad = "---\ntype: fact\nid: fact-bad\ntopics: [project-alpha]\nstatus: active\nconfidence: very\nprovenance: human\ncreated: 2026-11-02\n---\nx\n"
    (vault_path / "facts").mkdir(exist_ok=True)
    (vault_path / "facts" / "fact-bad.md").write_text(bad)
    bare_path = {**os.environ, **GIT_IDENTITY, "PATH": "/usr/bin:/bin"}
    # No am anywhere: the commit goes through, and the person is told how to fix it, where Obsidian shows it.
    proc = _commit(vault_path, "no am", bare_path)
    assert proc.returncode == 0, proc.stderr
    assert "cannot find am" in proc.stderr and "am hooks install" in proc.stderr
    health = (vault_path / "am-health.md").read_text()
    assert "cannot find am" in health and "am hooks install" in health
    assert "am-health.md" not in run_git(vault_path, "status", "--porcelain")  # ignored, never committed
    # An am on PATH (the package reinstalled elsewhere): the hook runs it, and it refuses a bad record.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "am"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={REPO_ROOT} exec {sys.executable} -m am.cli.main \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    (vault_path / "facts" / "fact-bad.md").write_text(bad.replace("fact-bad", "fact-bad2"))
    with_am = {**bare_path, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    refused = _commit(vault_path, "am on PATH", with_am)
    assert refused.returncode != 0 and "fact-bad.md" in refused.stderr and "confidence" in refused.stderr
    assert hook.exists()
    fixed = CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor", "--fix", "--format", "json"])
    assert json.loads(fixed.stdout)["findings"] == [] or all(
        not f["kind"].startswith("hook-") for f in json.loads(fixed.stdout)["findings"])


def test_a_fresh_clone_has_no_hooks_and_doctor_says_so(alpha: object, vault_path: Path, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(vault_path), str(clone))
    result = CliRunner().invoke(cli, ["--vault", str(clone), "doctor"])
    assert result.exit_code == 1 and result.stdout.count("hook-missing") == 5
    assert "am hooks install" in result.stdout
    CliRunner().invoke(cli, ["--vault", str(clone), "doctor", "--fix"])
    assert "hook-" not in CliRunner().invoke(cli, ["--vault", str(clone), "doctor"]).stdout


def test_a_clone_without_the_merge_driver_its_gitattributes_names_is_reported_and_fixed(
        alpha: object, vault_path: Path, tmp_path: Path) -> None:
    am("--vault", str(vault_path), "hooks", "install")  # commits .gitattributes: merge=am for every clone
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(vault_path), str(clone))
    result = CliRunner().invoke(cli, ["--vault", str(clone), "doctor"])
    assert result.exit_code == 1 and "merge-driver-missing" in result.stdout and "merge.am.driver" in result.stdout
    fixed = CliRunner().invoke(cli, ["--vault", str(clone), "doctor", "--fix"])
    assert fixed.exit_code == 0, fixed.output
    assert "merge-driver %O %A %B %P" in run_git(clone, "config", "merge.am.driver")
    assert run_git(clone, "status", "--porcelain").strip() == ""
    assert run_git(clone, "rev-parse", "HEAD") == run_git(vault_path, "rev-parse", "HEAD")  # config only
    assert "merge-driver" not in CliRunner().invoke(cli, ["--vault", str(clone), "doctor"]).stdout


def test_a_merge_driver_whose_am_is_gone_is_reported_and_fixed(alpha: object, vault_path: Path) -> None:
    # An upgrade into a new virtualenv: the hooks fall back to am on PATH, the driver line does not.
    am("--vault", str(vault_path), "hooks", "install")
    gone = "/nonexistent/venv/bin/python3 -I -c 'from am.cli.main import main; main()' merge-driver %O %A %B %P"
    run_git(vault_path, "config", "merge.am.driver", gone)
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor"])
    assert result.exit_code == 1 and "merge-driver-broken" in result.stdout
    assert "/nonexistent/venv/bin/python3" in result.stdout and "am hooks install" in result.stdout
    fixed = CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor", "--fix"])
    assert fixed.exit_code == 0, fixed.output
    assert "/nonexistent" not in run_git(vault_path, "config", "merge.am.driver")
    assert "merge-driver" not in CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor"]).stdout
    # A driver that is not am's is not ours to judge.
    run_git(vault_path, "config", "merge.am.driver", "/nonexistent/tool %A %B")
    assert "merge-driver" not in CliRunner().invoke(cli, ["--vault", str(vault_path), "doctor"]).stdout


def test_post_commit_warnings_land_in_the_health_note(alpha: object, vault_path: Path) -> None:
    am("--vault", str(vault_path), "hooks", "install")
    (vault_path / "facts").mkdir(exist_ok=True)
    (vault_path / "facts" / "fact-orphan.md").write_text(
        "---\ntype: fact\nid: fact-orphan\ntopics: [project-nowhere]\nstatus: active\nconfidence: medium\n"
        "provenance: human\ncreated: 2026-11-02\n---\n"
        "See [[ghost]].\n")
    proc = _commit(vault_path, "orphan", {**os.environ, **GIT_IDENTITY})
    assert proc.returncode == 0, proc.stderr
    health = (vault_path / "am-health.md").read_text()
    assert "project-nowhere" in health and "[[ghost]]" in health and "post-commit" in health
    assert run_git(vault_path, "status", "--porcelain").strip() == ""


@pytest.mark.parametrize("title", ["Li Wei", "李伟", "a/b: c?"])
def test_readable_names_for_new_topics(vault_path: Path, title: str) -> None:
    am("init", str(vault_path), "--obsidian")
    out = am("--vault", str(vault_path), "topic", "add", "person-x", "--title", title, "--format", "json")
    path = json.loads(out)["records"][0]["path"]
    assert path == {"Li Wei": "topics/Li Wei.md", "李伟": "topics/李伟.md", "a/b: c?": "topics/a b c.md"}[title]
    am("--vault", str(vault_path), "fact", "add", "X holds.", "--topic", "person-x", "--id", "fact-x")
    fact = next((vault_path / "facts").rglob("fact-x.md")).read_text()
    assert f'topics: ["[[{Path(path).stem}]]"]' in fact  # Obsidian links by file name
    assert "fact-x" in am("--vault", str(vault_path), "fact", "list", "--topic", "person-x")


def _linked_fact(vault_path: Path, topics: dict[str, str], text: str, fid: str) -> list[str]:
    """An Obsidian vault (property links) with these topics (id: title) and a fact about them; its --vault args."""
    am("init", str(vault_path), "--obsidian")
    v = ["--vault", str(vault_path)]
    for tid, title in topics.items():
        am(*v, "topic", "add", tid, "--title", title)
    am(*v, "fact", "add", text, *[arg for tid in topics for arg in ("--topic", tid)], "--id", fid)
    return v


def test_supersede_inherits_topics_written_as_property_links(vault_path: Path) -> None:
    # With property_links (am obsidian setup), am writes topics as "[[Title]]"; a supersede inherits them as ids.
    v = _linked_fact(vault_path, {"person-li": "Li Wei", "project-alpha": "Alpha"}, "Li owns Alpha.", "fact-old")
    assert 'topics: ["[[Li Wei]]", "[[Alpha]]"]' in next((vault_path / "facts").rglob("fact-old.md")).read_text()
    am(*v, "fact", "supersede", "fact-old", "Li and Ana own Alpha.", "--reason", "Ana joined", "--id", "fact-new")
    new = next((vault_path / "facts").rglob("fact-new.md")).read_text()
    assert 'topics: ["[[Li Wei]]", "[[Alpha]]"]' in new and 'supersedes: ["[[fact-old]]"]' in new
    assert "fact-new" in am(*v, "fact", "list", "--topic", "person-li")
    assert run_git(vault_path, "show", "--stat", "--format=%s", "HEAD").startswith("fact: supersede fact-old -> fact-new")


def test_topic_rename_keeps_property_links_as_links(vault_path: Path) -> None:
    # Facts and relations am wrote with property_links name topics as "[[Title]]"; a rename keeps them links.
    v = _linked_fact(vault_path, {"project-x": "Project X", "tool-redis": "Redis"}, "X uses Redis.", "fact-a")
    am(*v, "relation", "add", "project-x", "depends-on", "tool-redis")
    am(*v, "topic", "rename", "project-x", "project-y", "--title", "Project Y")
    fact = next((vault_path / "facts").rglob("fact-a.md")).read_text()
    assert 'topics: ["[[Project Y]]", "[[Redis]]"]' in fact
    relation = next((vault_path / "relations").rglob("project-y--depends-on--tool-redis.md")).read_text()
    assert 'from: "[[Project Y]]"\nto: "[[Redis]]"\n' in relation
    assert run_git(vault_path, "ls-files", "topics").split() == ["topics/Project", "Y.md", "topics/Redis.md"]
    assert "fact-a" in am(*v, "fact", "list", "--topic", "project-y")


@pytest.mark.parametrize("title", ["Kafka", "Untitled", "Li Wei"])
def test_the_topic_template_makes_a_valid_topic_whatever_the_note_is_called(vault_path: Path, title: str) -> None:
    # Obsidian fills {{title}} with the note's file name, which is rarely an id ("Untitled", "Kafka").
    am("init", str(vault_path), "--obsidian")
    filled = (vault_path / "templates/am-topic.md").read_text().replace("{{title}}", title).replace(
        "{{date:YYYYMMDD-HHmmss}}", "20261102-090000").replace("{{date:YYYY-MM-DDTHH:mm:ssZ}}",
                                                               "2026-11-02T09:00:00+00:00")
    record = parse_record(filled, f"topics/{title}.md")
    check_record(record, path=f"topics/{title}.md")
    assert record.title == title
