"""Acceptance: a scripted Obsidian session, each step committed by `git add -A && git commit` through am's hooks.

What obsidian-git does on its timer is `git add -A && git commit`; the hooks are
the ones `am hooks install` writes, run by the git CLI. The session gives
exactly the accepted and refused commits listed in ``EXPECTED``, and every
refusal names the file and the fix on one line.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from click.testing import CliRunner
from conftest import GIT_IDENTITY, fsck_clean, run_git

from am.cli.main import cli


def am(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def write(root: Path, rel: str, text: str | bytes) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text, encoding="utf-8")


def backup(root: Path, message: str) -> tuple[str, str]:
    """Do what obsidian-git's backup does; return ("accepted"|"refused"|"nothing", stderr)."""
    env = {**os.environ, **GIT_IDENTITY}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    proc = subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], capture_output=True,
                          text=True, env=env)
    if proc.returncode == 0:
        return "accepted", proc.stderr
    if "nothing to commit" in proc.stdout + proc.stderr:
        return "nothing", proc.stderr
    return "refused", proc.stderr


FACT = """---
type: fact
id: {id}
{topics}
status: active
confidence: high
provenance: human
created: 2026-11-02T09:00:00+00:00
---
{body}
"""

EXPECTED = [
    ("new note in topics/ (Obsidian's Untitled.md)", "accepted"),
    ("property links, flow list", "accepted"),
    ("property links, block list, by title", "accepted"),
    ("a readable file name", "accepted"),
    ("a fact linking a readable name", "accepted"),
    ("after am topic rename", "nothing"),
    ("hand rename that breaks a relation", "refused"),
    ("the hand rename undone", "nothing"),
    (".obsidian/ and .trash/", "accepted"),
    ("attachments", "accepted"),
    ("a fact with a bad confidence", "refused"),
    ("the fact fixed", "accepted"),
]


def test_an_obsidian_session_gives_exactly_the_expected_commits(vault_path: Path) -> None:
    root = vault_path
    am("init", str(root))
    v = ["--vault", str(root)]
    am(*v, "obsidian", "setup")
    am(*v, "topic", "add", "project-alpha", "--title", "Alpha service", "--alias", "Alpha")
    am(*v, "topic", "add", "tool-redis", "--title", "Redis", "--kind", "tool")
    am(*v, "relation", "add", "project-alpha", "depends-on", "tool-redis")
    am(*v, "hooks", "install")
    outcomes: list[tuple[str, str]] = []
    said: dict[str, str] = {}

    def step(name: str) -> None:
        outcome, stderr = backup(root, name)
        outcomes.append((name, outcome))
        said[name] = stderr

    write(root, "topics/Untitled.md", "")
    step(EXPECTED[0][0])
    write(root, "facts/2026/11/02/fact-flow.md", FACT.format(
        id="fact-flow", topics='topics: ["[[project-alpha]]", "[[tool-redis|Redis]]"]',
        body="Alpha keeps sessions in Redis."))
    step(EXPECTED[1][0])
    write(root, "facts/2026/11/02/fact-block.md", FACT.format(
        id="fact-block", topics='topics:\n  - "[[Alpha service]]"\n  - "[[Alpha]]"', body="Alpha has an SLA."))
    step(EXPECTED[2][0])
    write(root, "topics/people/Li Wei.md", "---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\n"
          "aliases: [李伟]\nstatus: active\ncreated: 2026-11-02T09:00:00+00:00\n---\nOwns [[project-alpha]].\n")
    step(EXPECTED[3][0])
    write(root, "facts/2026/11/02/fact-owner.md", FACT.format(
        id="fact-owner", topics='topics: ["[[Li Wei]]"]', body="[[李伟]] owns [[Alpha service]] and [[Untitled]]."))
    step(EXPECTED[4][0])
    am(*v, "topic", "rename", "tool-redis", "tool-valkey", "--title", "Valkey")
    step(EXPECTED[5][0])
    # A hand rename: the file, id and title change; the relation and two facts still name the old topic.
    # (`am obsidian setup` asked for readable names: the topic's file is named after its title.)
    old = (root / "topics/Alpha service.md").read_text()
    (root / "topics/Alpha service.md").unlink()
    write(root, "topics/Alpha API.md", old.replace("id: project-alpha", "id: project-a").replace(
        "title: Alpha service", "title: Alpha API"))
    step(EXPECTED[6][0])
    (root / "topics/Alpha API.md").unlink()
    run_git(root, "checkout", "HEAD", "--", "topics/Alpha service.md")
    step(EXPECTED[7][0])
    write(root, ".obsidian/workspace.json", '{"main": {}}\n')
    write(root, ".trash/old note.md", "gone\n")
    step(EXPECTED[8][0])
    write(root, "topics/diagram.png", b"\x89PNG\r\n\x1a\n\x00\x00binary")
    write(root, "attachments/spec.pdf", b"%PDF-1.4 binary\x00")
    step(EXPECTED[9][0])
    bad = FACT.format(id="fact-bad", topics="topics: [project-alpha]", body="Alpha is fast.")
    write(root, "facts/2026/11/02/fact-bad.md", bad.replace("confidence: high", "confidence: very"))
    step(EXPECTED[10][0])
    write(root, "facts/2026/11/02/fact-bad.md", bad)
    step(EXPECTED[11][0])

    assert outcomes == EXPECTED
    # Refusals: one line each, naming the file and the fix.
    rename = [ln for ln in said[EXPECTED[6][0]].splitlines() if ln.strip().startswith("error:")]
    assert rename and all("\n" not in ln for ln in rename)
    assert any("relations/" in ln and "project-alpha--depends-on--tool-valkey.md" in ln
               and "am topic rename project-alpha" in ln for ln in rename), rename
    assert any("fact-block.md" in ln and "'topics'" in ln for ln in rename), rename
    assert any("fact-flow.md" in ln and "'topics'" in ln for ln in rename), rename
    bad_lines = [ln for ln in said[EXPECTED[10][0]].splitlines() if ln.strip().startswith("error:")]
    assert len(bad_lines) == 1 and "facts/2026/11/02/fact-bad.md" in bad_lines[0]
    assert "confidence" in bad_lines[0] and bad_lines[0].count("facts/2026/11/02/fact-bad.md") == 1
    # The note, the readable name and the links by title, alias and file name raise no warning.
    assert "Untitled" not in said[EXPECTED[0][0]] and "warning" not in said[EXPECTED[4][0]], said
    # The rename was one commit that moved the file and rewrote the relation and the fact.
    rename_commit = run_git(root, "log", "--format=%H", "--grep", "^topic: rename").split()[0]
    changed = run_git(root, "show", "--name-status", "--format=%s", rename_commit).split("\n")
    assert changed[0] == "topic: rename tool-redis -> tool-valkey"
    # Readable names: the file is named after the title, so the new title moves it.
    assert any(ln.startswith("R") and ln.endswith("\ttopics/Redis.md\ttopics/Valkey.md") for ln in changed), changed
    # (Git sees a move when the relation kept enough of its lines: its links stay links.)
    assert any(ln.startswith(("A\trelations/", "R")) and ln.endswith("project-alpha--depends-on--tool-valkey.md")
               for ln in changed), changed
    relation = next((root / "relations").rglob("project-alpha--depends-on--tool-valkey.md"))
    assert 'to: "[[Valkey]]"' in relation.read_text()
    flow = (root / "facts/2026/11/02/fact-flow.md").read_text()
    # The file's own form: its link by id stays; the renamed topic is linked by its new file name.
    assert 'topics: ["[[project-alpha]]", "[[Valkey]]"]' in flow, flow
    # am reads it all: the facts by title and readable name belong to their topics.
    assert "fact-block" in am(*v, "fact", "list", "--topic", "project-alpha")
    assert "fact-owner" in am(*v, "fact", "list", "--topic", "person-li-wei")
    report = am(*v, "check")
    assert "ok: 9 files, 8 records: 0 errors, 0 warnings, 1 notes" in report, report  # the note: Untitled.md
    assert run_git(root, "status", "--porcelain").strip() == ""
    fsck_clean(root)
