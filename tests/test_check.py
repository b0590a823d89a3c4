"""am check: every rule of the format, its severities, and the exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from am.cli.main import cli
from am.upkeep.check import check_vault


def write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def fact_text(fid: str, *, topics: str = "[project-alpha]", extra: str = "", body: str = "A fact.") -> str:
    return (f"---\ntype: fact\nid: {fid}\ntopics: {topics}\nstatus: active\nconfidence: medium\n"
            f"provenance: human\n{extra}created: 2026-09-23T12:00:00+08:00\n---\n{body}\n")


def relation_text(rid: str, rel: str, a: str, b: str) -> str:
    return (f"---\ntype: relation\nid: {rid}\nrel: {rel}\nfrom: {a}\nto: {b}\nstatus: active\n"
            f"created: 2026-09-23T12:00:00+08:00\n---\n[[{a}]] {rel} [[{b}]].\n")


def codes(report: object) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for issue in report.issues:  # type: ignore[attr-defined]
        out.setdefault(issue.code, set()).add(issue.path)
    return out


def test_demo_vault_is_clean(tmp_path: Path) -> None:
    from am.demo import materialise_demo
    from am.vault import Vault

    materialise_demo(tmp_path / "demo")
    with Vault.open(tmp_path / "demo") as v:
        report = check_vault(v)
    assert report.records >= 10
    assert report.issues == ()
    assert report.exit_code(strict=True) == 0


def test_each_rule_is_reported(alpha: object, vault_path: Path) -> None:
    day = "facts/2026/09/23"
    write(vault_path, "relations/2026/09/project-alpha--likes--tool-redis.md",
          relation_text("project-alpha--likes--tool-redis", "likes", "project-alpha", "tool-redis"))
    write(vault_path, f"{day}/fact-name-differs.md", fact_text("fact-other-name"))
    write(vault_path, f"{day}/fact-dup.md", fact_text("fact-dup"))
    write(vault_path, "facts/2026/09/24/fact-dup.md", fact_text("fact-dup").replace("09-23", "09-24"))
    write(vault_path, f"{day}/fact-a.md", fact_text("fact-a", extra="supersedes: [fact-b]\nsuperseded_by: fact-b\n"))
    write(vault_path, f"{day}/fact-b.md", fact_text("fact-b", extra="supersedes: [fact-a]\nsuperseded_by: fact-a\n"))
    write(vault_path, f"{day}/fact-new.md", fact_text("fact-new", extra="supersedes: [fact-old]\n"))
    write(vault_path, f"{day}/fact-old.md", fact_text("fact-old"))
    write(vault_path, f"{day}/fact-orphan-topic.md", fact_text("fact-orphan-topic", topics="[project-nowhere]"))
    write(vault_path, f"{day}/fact-no-topics.md", fact_text("fact-no-topics", topics="[]"))
    write(vault_path, f"{day}/fact-links.md",
          fact_text("fact-links", body="See [[project-alpha]], [[ghost-topic]] and `[[in-code]]`, [[other:x]]."))
    write(vault_path, "relations/2026/09/project-alpha--references--tool-ghost.md",
          relation_text("project-alpha--references--tool-ghost", "references", "project-alpha", "tool-ghost"))
    write(vault_path, "topics/fact-in-topics.md", fact_text("fact-in-topics"))
    write(vault_path, "facts/fact-top-level.md", fact_text("fact-top-level"))
    write(vault_path, f"{day}/fact-broken.md", "---\ntype: fact\nid: [unclosed\n---\nx\n")

    report = check_vault(alpha)
    found = codes(report)
    assert found["relation-type"] == {"relations/2026/09/project-alpha--likes--tool-redis.md"}
    likes = [i for i in report.issues if i.code == "relation-type"][0]
    assert "depends-on" in likes.message and likes.field == "rel" and likes.severity == "error"
    assert not any(i.path == f"{day}/fact-name-differs.md" for i in report.errors)  # readable names are fine
    assert found["duplicate-id"] == {"facts/2026/09/24/fact-dup.md"}
    assert len(found["supersede-cycle"]) == 1
    assert f"{day}/fact-new.md" in found["half-supersession"]
    assert found["unknown-topic"] == {f"{day}/fact-orphan-topic.md"}
    assert f"{day}/fact-no-topics.md" in found["schema"]
    dangling = [i for i in report.issues if i.code == "dangling-link"]
    assert [(i.path, i.severity) for i in dangling] == [(f"{day}/fact-links.md", "warning")]
    assert "ghost-topic" in dangling[0].message and dangling[0].line == 1
    assert found["missing-target"] == {"relations/2026/09/project-alpha--references--tool-ghost.md",
                                       "relations/2026/09/project-alpha--likes--tool-redis.md"}
    assert found["misplaced"] == {"facts/fact-top-level.md"}
    assert all(i.severity == "note" for i in report.issues if i.code == "misplaced")
    # A record's kind must match its folder (issue 14: an impostor could shadow a record).
    assert found["wrong-folder"] == {"topics/fact-in-topics.md"}
    assert all(i.severity == "error" for i in report.issues if i.code == "wrong-folder")
    assert found["parse"] == {f"{day}/fact-broken.md"}
    assert report.exit_code() != 0


def test_a_bare_value_names_a_record_by_id_not_by_title(alpha: object, vault_path: Path) -> None:
    # A sync merged a fact naming topic 'redis' after the topic was renamed tool-redis (title Redis): check said
    # ok, reading 'redis' as the title, while the slice (the cache reads a bare value as an id) showed the fact
    # under no topic file. A [[link]] by title still resolves.
    alpha.add_topic(title="Redis", kind="tool", id="tool-redis")  # type: ignore[attr-defined]
    day = "facts/2026/09/23"
    write(vault_path, f"{day}/fact-bare.md", fact_text("fact-bare", topics="[redis]"))
    write(vault_path, f"{day}/fact-link.md", fact_text("fact-link", topics='["[[Redis]]"]'))
    write(vault_path, "relations/2026/09/project-alpha--depends-on--redis.md",
          relation_text("project-alpha--depends-on--redis", "depends-on", "project-alpha", "redis"))
    found = codes(check_vault(alpha))
    assert found["unknown-topic"] == {f"{day}/fact-bare.md"}
    assert found["missing-target"] == {"relations/2026/09/project-alpha--depends-on--redis.md"}
    pack = CliRunner().invoke(cli, ["--vault", str(vault_path), "slice", "--topic", "tool-redis"]).stdout
    assert "fact-link" in pack and "fact-bare" not in pack


def test_warnings_fail_only_under_strict(alpha: object, vault_path: Path) -> None:
    write(vault_path, "facts/2026/09/23/fact-links.md", fact_text("fact-links", body="See [[ghost]]."))
    runner = CliRunner()
    plain = runner.invoke(cli, ["--vault", str(vault_path), "check"])
    assert plain.exit_code == 0, plain.output
    assert "dangling-link" in plain.output
    strict = runner.invoke(cli, ["--vault", str(vault_path), "check", "--strict", "--format", "json"])
    assert strict.exit_code == 5
    data = json.loads(strict.stdout)
    assert data["ok"] is False and data["warnings"] == 1 and data["errors"] == 0
    assert data["issues"][0]["code"] == "dangling-link"


def test_links_to_attachments_resolve_to_the_files_obsidian_finds(alpha: object, vault_path: Path) -> None:
    # Obsidian pastes an image as ![[Pasted image ...png]] into its attachment folder (or beside the note).
    day = "facts/2026/09/23"
    (vault_path / "attachments").mkdir()
    (vault_path / "attachments" / "Pasted image 20261201101500.png").write_bytes(b"\x89PNG")
    (vault_path / day).mkdir(parents=True)
    (vault_path / day / "diagram.pdf").write_bytes(b"%PDF")
    body = ("![[Pasted image 20261201101500.png]] and [[diagram.pdf|the diagram]] and "
            "![[attachments/Pasted image 20261201101500.png]]; gone: ![[Pasted image 19990101.png]], [[ghost.v2]].")
    write(vault_path, f"{day}/fact-pics.md", fact_text("fact-pics", body=body))
    dangling = [i.message for i in check_vault(alpha).issues if i.code == "dangling-link"]
    assert sorted(dangling) == ["[[Pasted image 19990101.png]] links to no record or note",
                                "[[ghost.v2]] links to no record or note"]
    # The pre-commit hook (am hooks install) answers the same: a commit of the fact warns of the missing ones only.
    runner = CliRunner()
    assert runner.invoke(cli, ["--vault", str(vault_path), "hooks", "install"]).exit_code == 0
    subprocess.run(["git", "-C", str(vault_path), "add", "-A"], check=True)
    done = subprocess.run(["git", "-C", str(vault_path), "commit", "-q", "-m", "pictures"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "19990101" in done.stderr and "ghost.v2" in done.stderr and "20261201101500" not in done.stderr


def test_errors_set_the_exit_code(alpha: object, vault_path: Path) -> None:
    write(vault_path, "relations/2026/09/a--likes--b.md", relation_text("a--likes--b", "likes", "project-alpha",
                                                                         "project-alpha"))
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "check"])
    assert result.exit_code == 5
    assert "relation type 'likes' is not allowed" in result.output


@pytest.mark.parametrize("subset", [True, False])
def test_subset_check_sees_the_rest(alpha: object, vault_path: Path, subset: bool) -> None:
    write(vault_path, "facts/2026/09/23/fact-old.md", fact_text("fact-old", extra="superseded_by: fact-new\n"))
    write(vault_path, "facts/2026/09/23/fact-new.md", fact_text("fact-new", extra="supersedes: [fact-old]\n"))
    paths = ["facts/2026/09/23/fact-new.md"] if subset else None
    report = check_vault(alpha, paths=paths)
    assert report.issues == ()


def test_notes_are_listed_once_and_never_warned_about_as_skipped(alpha: object, vault_path: Path) -> None:
    # Obsidian's Untitled.md and a person's own page are notes: check and doctor say nothing else about them.
    write(vault_path, "topics/Untitled.md", "")
    write(vault_path, "facts/reading.md", "---\ntype: book\n---\nA page of mine.\n")
    write(vault_path, "facts/2026/09/23/fact-broken.md", fact_text("fact-broken").replace("confidence: medium",
                                                                                          "confidence: maybe"))
    for args in (["check"], ["check", "--format", "json"], ["doctor"]):
        proc = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), *args],
                              capture_output=True, text=True)
        assert "Untitled.md" not in proc.stderr and "reading.md" not in proc.stderr, (args, proc.stderr)
    report = check_vault(alpha)
    assert codes(report)["note"] == {"topics/Untitled.md", "facts/reading.md"}
    assert codes(report)["schema"] == {"facts/2026/09/23/fact-broken.md"}


def test_every_issue_code_am_check_reports_is_listed_in_docs_check_md() -> None:
    import ast

    root = Path(__file__).resolve().parent.parent
    page = (root / "docs" / "check.md").read_text(encoding="utf-8")
    listed = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `")}
    codes = set()
    for source in (root / "am").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Issue", "WorldIssue")
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
                codes.add(node.args[1].value)
    assert "unresolved-world" in codes and "parse" in codes  # the search finds the codes
    assert not codes - listed, f"docs/check.md does not list: {', '.join(sorted(codes - listed))}"


def test_conflict_markers_a_plain_git_merge_committed_are_an_error(alpha: object, vault_path: Path) -> None:
    from conftest import run_git

    from am.records.merge import merge_record

    path = str(alpha.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"]).paths[0])  # type: ignore[attr-defined]
    run_git(vault_path, "switch", "-q", "-c", "other")
    text = (vault_path / path).read_text(encoding="utf-8")
    write(vault_path, path, text.replace("on Fridays", "on Mondays"))
    run_git(vault_path, "commit", "-q", "-am", "other side")
    run_git(vault_path, "switch", "-q", "main")
    write(vault_path, path, text.replace("on Fridays", "on Tuesdays"))
    run_git(vault_path, "commit", "-q", "-am", "this side")
    # Both sides add the same new fact: Git wraps the whole files, frontmatter and all, in markers.
    both = "facts/2026/09/23/fact-both.md"
    run_git(vault_path, "switch", "-q", "other")
    write(vault_path, both, fact_text("fact-both", body="One text."))
    run_git(vault_path, "add", both)
    run_git(vault_path, "commit", "-q", "-m", "added there")
    run_git(vault_path, "switch", "-q", "main")
    write(vault_path, both, fact_text("fact-both", body="Another text.", extra="pinned: true\n"))
    run_git(vault_path, "add", both)
    run_git(vault_path, "commit", "-q", "-m", "added here")
    assert run_git(vault_path, "merge", "other", check=False)  # no merge driver: Git writes its markers
    run_git(vault_path, "commit", "-q", "-am", "merged with the markers in")
    assert "<<<<<<< HEAD" in run_git(vault_path, "show", f"HEAD:{path}")

    # am's own merge of a topic changed on both sides: two texts between am:merged lines, not Git's markers.
    topic = run_git(vault_path, "ls-files", "topics").split()[0]
    t = (vault_path / topic).read_text(encoding="utf-8")
    write(vault_path, topic, merge_record(topic, t, t + "Ours.\n", t + "Theirs.\n").text)
    write(vault_path, "facts/2026/09/23/fact-heading.md", fact_text("fact-heading", body="Title\n=======\n\nText."))

    report = check_vault(alpha)
    marked = [i for i in report.issues if i.code == "conflict-markers"]
    assert {i.path for i in marked} == {path, both} and all(i.severity == "error" for i in marked)
    line = (vault_path / path).read_text(encoding="utf-8").splitlines().index("<<<<<<< HEAD") + 1
    assert [i.line for i in marked if i.path == path] == [line]
    assert "am hooks install" in marked[0].message and "keep one text" in marked[0].message
    assert codes(report)["merged-text"] == {topic}
    assert not any(i.path == both and i.code == "note" for i in report.issues)  # not taken for a note
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "check"])
    assert result.exit_code == 5 and "[conflict-markers]" in result.output


def test_the_fast_paths_find_what_the_full_passes_find(alpha: object, vault_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Speed (bench/bench_check.py): a file holding its record as written skips jsonschema when check_record passes,
    # the world pass takes the records the check parsed, and doctor leaves the world pass out (warnings only).
    # Each must find exactly what the full passes find, on a vault of every kind of file.
    from conftest import run_git

    from am.records import schemas
    from am.records.codec import parse_record, render_record
    from am.upkeep.worldcheck import world_issues

    code = tmp_path / "alpha-code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    (code / "a.txt").write_text("a\n")
    run_git(code, "add", "a.txt")
    run_git(code, "commit", "-q", "-m", "a")
    assert CliRunner().invoke(cli, ["--vault", str(vault_path), "repo", "add", "project-alpha", str(code)]).exit_code == 0
    v: Any = alpha
    v.add_fact("Alpha deploys on Fridays.", topics=["project-alpha"])  # am's plain form
    day = "facts/2026/09/23"
    fact = fact_text("f-x")
    hostile = {
        f"{day}/f-plain.md": fact,
        f"{day}/f-no-status.md": fact.replace("status: active\n", ""),
        f"{day}/f-bad-conf.md": fact.replace("medium", "sure"),
        f"{day}/f-link-form.md": fact.replace("[project-alpha]", '["[[project-alpha]]", "[[Li Wei]]"]'),
        f"{day}/f-mixed-links.md": fact.replace("[project-alpha]", '["[[project-alpha]]", project-alpha]'),
        f"{day}/f-bare-name.md": fact.replace("[project-alpha]", "[Li Wei]"),
        f"{day}/f-calendar.md": fact_text("f-x", extra="valid_from: 2026-13-01\n"),
        f"{day}/f-backwards.md": fact_text("f-x", extra="valid_from: 2026-09-24\nvalid_until: 2026-09-23\n"),
        f"{day}/f-empty-tag.md": fact_text("f-x", extra='tags: [""]\n'),
        f"{day}/f-empty-list.md": fact_text("f-x", extra="tags: []\npinned: false\n"),
        f"{day}/f-extra.md": fact_text("f-x", extra="mine: {a: 1}\nnull_key:\n"),
        f"{day}/f-number.md": fact_text("f-x", extra="reason: 5\n"),
        f"{day}/f-hex.md": fact_text("f-x", extra="repo: project-alpha\ncommit: zz12\n"),
        f"{day}/f-gone-branch.md": fact_text("f-x", extra="repo: project-alpha\nversion: gone\n"),
        f"{day}/f-gone-commit.md": fact_text("f-x", extra="repo: project-alpha\ncommit: abcdef12\n"),
        f"{day}/f-unregistered.md": fact_text("f-x", extra="repo: nowhere\n"),
        f"{day}/f-control.md": fact_text("f-x", body="red\x1b[31m"),
        f"{day}/f-crlf.md": fact_text("f-x").replace("\n", "\r\n"),
        f"{day}/f-bom.md": "\ufeff" + fact_text("f-x"),
        f"{day}/f-broken.md": "---\ntype: fact\nid: [unclosed\n---\nx\n",
        f"{day}/f-not-closed.md": "---\ntype: fact\nid: f-x\n",
        f"{day}/Untitled.md": "",
        "facts/2026/09/24/f-dup.md": fact_text("f-dup", extra="repo: nowhere\n"),
        "facts/2026/09/25/f-dup.md": fact_text("f-dup", extra="repo: nowhere\n"),
        "facts/f-moved.md": fact_text("f-moved"),
        "topics/f-impostor.md": fact_text("f-impostor"),
        "topics/Li Wei.md": "---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\n---\nA person.\n",
        "topics/topic-bad-kind.md": "---\ntype: topic\nid: topic-bad-kind\nkind: thing\ntitle: Bad\n---\nx\n",
        "topics/topic-no-kind.md": "---\ntype: topic\nid: topic-no-kind\ntitle: No kind\n---\nx\n",
        "relations/2026/09/a--likes--b.md": relation_text("a--likes--b", "likes", "project-alpha", "b"),
        "relations/2026/09/project-alpha--references--person-li-wei.md": relation_text(
            "project-alpha--references--person-li-wei", "references", "project-alpha", "person-li-wei"),
    }
    for rel, text in hostile.items():
        stem = rel.rsplit("/", 1)[-1][:-3]
        write(vault_path, rel, text.replace("id: f-x\n", f"id: {stem}\n"))
    topic = parse_record((vault_path / "topics/project-alpha.md").read_text(encoding="utf-8"), "topics/project-alpha.md")
    write(vault_path, "topics/project-alpha.md", render_record(topic, links=True))  # am's link form
    taken: list[bool] = []
    real = schemas.passes_as_written
    monkeypatch.setattr(schemas, "passes_as_written", lambda m, r: taken.append(real(m, r)) or taken[-1])
    fast = check_vault(alpha)
    assert taken.count(True) >= 5 and taken.count(False) >= 10  # both paths ran
    monkeypatch.setattr(schemas, "passes_as_written", lambda m, r: False)  # the schema on every file, as before
    full = check_vault(alpha, worlds=False, memo=False)  # every file parsed again, not taken from the first check
    order = {"error": 0, "warning": 1, "note": 2}
    expected = sorted([*full.issues, *world_issues(v.iter_records())],
                      key=lambda i: (order[i.severity], i.path, i.code, i.field or "", i.message))
    assert list(fast.issues) == expected
    assert (fast.files, fast.records) == (full.files, full.records)
    assert {"schema", "unresolved-world", "duplicate-id", "wrong-folder", "relation-type"} <= set(codes(fast))
    assert full.errors == fast.errors  # doctor's share (am/upkeep/recover.py checks with worlds=False)


@pytest.mark.parametrize("where", ["absolute", "climbs", "link", "not-text"])
def test_a_session_topic_whose_file_is_outside_sessions_is_an_error(alpha: object, vault_path: Path,
                                                                     tmp_path: Path, where: str) -> None:
    """am propose refuses such a topic, search and review skip it (am/records/sessionlog.py log_file): check says so."""
    outside = tmp_path / "private.jsonl"
    outside.write_text('{"ts": "2026-09-23T12:00:00Z", "role": "user", "text": "hi"}\n', encoding="utf-8")
    (vault_path / "sessions" / "claude-code").mkdir(parents=True)
    value = {"absolute": str(outside), "climbs": "sessions/../../private.jsonl",
             "link": "sessions/claude-code/s1.jsonl", "not-text": "[sessions/claude-code/s1.jsonl]"}[where]
    if where == "link":
        (vault_path / value).symlink_to(outside)
    write(vault_path, "topics/session-s1.md", "---\ntype: topic\nid: session-s1\nkind: session\ntitle: Session s1\n"
          f"file: {value}\ncreated: 2026-09-23T12:00:00+08:00\n---\nA session.\n")
    write(vault_path, "sessions/claude-code/s2.jsonl", outside.read_text(encoding="utf-8"))
    write(vault_path, "topics/session-s2.md", "---\ntype: topic\nid: session-s2\nkind: session\ntitle: Session s2\n"
          "file: sessions/claude-code/s2.jsonl\ncreated: 2026-09-23T12:00:00+08:00\n---\nA session.\n")
    report = check_vault(alpha)
    found = [i for i in report.issues if i.code == "session-file"]
    assert [(i.severity, i.path, i.field) for i in found] == [("error", "topics/session-s1.md", "file")]
    assert "sessions/" in found[0].message and report.exit_code() == 5
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "check"])
    assert result.exit_code == 5 and "[session-file]" in result.output, result.output
