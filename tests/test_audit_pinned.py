"""`am log` and `am history` pinned line by line against the git CLI, on a history of am writes, hand commits and a merge.

The expected output is built from `git log` and `git diff-tree` (and the files'
frontmatter read with PyYAML), so it holds whatever am does inside to find it.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest
import yaml
from click.testing import CliRunner
from conftest import run_git

from am.cli.main import cli
from am.vault import Vault

_TOPS = ("topics", "facts", "relations")


def am(vault: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--vault", str(vault), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _meta(vault: Path, rev: str, path: str) -> dict[str, object] | None:
    """A file's frontmatter at a revision, read with PyYAML (None: unreadable)."""
    text = run_git(vault, "show", f"{rev}:{path}")
    parts = text.split("---\n", 2)
    try:
        meta = yaml.safe_load(parts[1]) if text.startswith("---\n") and len(parts) == 3 else None
    except yaml.YAMLError:
        return None
    return meta if isinstance(meta, dict) else None


def _record_paths(vault: Path, commit: str, parents: list[str]) -> list[tuple[str, str]]:
    """(status, path) of the record files a commit changed against its first parent, as git diff-tree names them."""
    args = [parents[0], commit] if parents else ["--root", commit]
    raw = run_git(vault, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--name-status", *args)
    fields = raw.split("\0")
    pairs = [(fields[i], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]
    return [(s, p) for s, p in pairs if PurePosixPath(p).parts[0] in _TOPS and p.endswith(".md")]


def _commits(vault: Path) -> list[dict[str, object]]:
    """Every commit, newest first (git log --date-order), with what am log shows of it."""
    fmt = "%H%x1f%P%x1f%cI%x1f%an%x1f%(trailers:key=Am-Op,valueonly,separator=%x1e)%x1f" \
          "%(trailers:key=Am-Actor,valueonly,separator=%x1e)%x1f%(trailers:key=Am-Record,valueonly,separator=%x1e)"
    out = []
    # Split on newlines only: str.splitlines also splits on \x1e, which separates the trailers here.
    for line in run_git(vault, "log", "--date-order", f"--format={fmt}").rstrip("\n").split("\n"):
        commit, parents, time, author, op, actor, records = line.split("\x1f")
        entry = {"commit": commit, "parents": parents.split(), "time": time, "manual": not op}
        if op:
            entry.update(op=op.split("\x1e")[0], actor=(actor.split("\x1e")[0] or author),
                         records=records.split("\x1e") if records else [])
        else:
            ids = []
            for status, path in _record_paths(vault, commit, entry["parents"]):
                meta = _meta(vault, entry["parents"][0] if status == "D" else commit, path) or {}
                rid = meta.get("id")
                ids.append(rid if isinstance(rid, str) and rid else PurePosixPath(path).stem)
            entry.update(op="manual", actor=author, records=sorted(set(ids)))
        out.append(entry)
    return out


def _log_line(e: dict[str, object]) -> str:
    records = list(e["records"])
    shown = ", ".join(records[:4]) + (f" +{len(records) - 4}" if len(records) > 4 else "")
    return f"{e['commit'][:10]}  {e['time']}  {e['actor']:<14} {e['op']:<16} {shown}"


def _history_lines(vault: Path, commits: list[dict[str, object]], rid: str) -> list[str]:
    lines = []
    for e in commits:
        if not e["manual"] and rid not in e["records"]:
            continue
        found = []
        for status, path in _record_paths(vault, e["commit"], e["parents"]):
            named = PurePosixPath(path).stem == rid
            if status == "D":
                was = _meta(vault, e["parents"][0], path) or {}
                if named or was.get("id") == rid:
                    found.append((True, "deleted", path))
                continue
            meta = _meta(vault, e["commit"], path) or {}
            if meta.get("id", rid if named else None) == rid:
                found.append((False, str(meta.get("status", "")), path))
        if any(not deleted for deleted, _, _ in found):
            found = [f for f in found if not f[0]]
        lines += [f"{e['commit'][:10]}  {e['time']}  {e['actor']:<14} {e['op']:<16} {state:<14} {path}"
                  for _, state, path in found]
    return lines[::-1]


@pytest.fixture
def long_history(alpha: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """am writes, hand commits (edits, a readable name, no id, an unreadable file, chmod, rename, delete), a merge."""
    v = vault_path

    def hand(message: str, *paths: str) -> None:
        run_git(v, "add", "-A", *paths)
        run_git(v, "commit", "-q", "-m", message)

    def dated(hours: int) -> None:  # commits on two branches at once: distinct times, so the order is git's
        stamp = f"{int(run_git(v, 'log', '-1', '--format=%ct')) + hours * 3600} +0000"
        monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
        monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)

    pool = alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-pool")
    alpha.add_fact("The cache holds 5 minutes.", topics=["project-alpha"], id="fact-cache")
    pool_path = v / pool.paths[0]
    pool_path.write_text(pool_path.read_text(encoding="utf-8") + "Checked by hand.\n", encoding="utf-8")
    (v / "topics" / "Li Wei.md").write_text(
        "---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\nstatus: active\n"
        "created: 2026-01-05T10:00:00Z\n---\nWorks on Alpha.\n", encoding="utf-8")
    (v / "topics" / "no-id.md").write_text("---\ntype: topic\ntitle: No id\n---\nA page.\n", encoding="utf-8")
    (v / "facts" / "broken.md").write_text("---\nid: fact-broken\ntopics: [unclosed\n---\nOops.\n", encoding="utf-8")
    hand("notes by hand")
    alpha.supersede_fact("fact-cache", "The cache holds 10 minutes.", reason="config changed", id="fact-cache-2")
    run_git(v, "checkout", "-q", "-b", "laptop")
    dated(1)
    li = v / "topics" / "Li Wei.md"
    li.write_text(li.read_text(encoding="utf-8") + "Speaks Mandarin.\n", encoding="utf-8")
    hand("edit Li Wei on the laptop")
    dated(1)
    (v / "facts" / "laptop").mkdir()
    (v / "facts" / "laptop" / "note.md").write_text(
        "---\ntype: fact\nid: f-laptop-1\nstatus: active\ntopics: [project-alpha]\n---\nOn the laptop.\n",
        encoding="utf-8")
    pool_copy = v / "facts" / "laptop" / "fact-pool.md"  # a second file of fact-pool (its id), deleted later
    pool_copy.write_text(pool_path.read_text(encoding="utf-8"), encoding="utf-8")
    hand("laptop notes")
    run_git(v, "checkout", "-q", "main")
    dated(3)
    pool_path.write_text(pool_path.read_text(encoding="utf-8") + "Checked again.\n", encoding="utf-8")
    hand("pool by hand on main")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    run_git(v, "merge", "-q", "--no-ff", "-m", "Merge branch 'laptop'", "laptop")
    run_git(v, "update-index", "--chmod=+x", pool.paths[0])
    run_git(v, "commit", "-q", "-m", "make the pool fact executable")
    run_git(v, "mv", pool.paths[0], "facts/Pool size.md")
    run_git(v, "rm", "-q", "topics/no-id.md", "facts/laptop/fact-pool.md")
    run_git(v, "commit", "-q", "-m", "rename and remove by hand")
    with Vault.open(v, actor="codex") as codex:  # a new process's view of the hand rename
        codex.set_fact_status("fact-pool", "contested", reason="someone saw 20")
    return v


def test_log_lines_match_git(long_history: Path) -> None:
    v = long_history
    commits = _commits(v)
    assert len(commits) >= 12 and sum(len(c["parents"]) > 1 for c in commits) == 1
    assert am(v, "log").splitlines() == [_log_line(e) for e in commits]
    shown = json.loads(am(v, "log", "--format", "json"))
    assert [(e["commit"], e["op"], e["actor"], e["records"], e["manual"]) for e in shown] == [
        (e["commit"], e["op"], e["actor"], e["records"], e["manual"]) for e in commits]
    assert am(v, "log", "-n", "3").splitlines() == [_log_line(e) for e in commits[:3]]
    for args, keep in ((("--actor", "Test Person"), lambda e: e["actor"] == "Test Person"),
                       (("--op", "manual"), lambda e: e["op"] == "manual"),
                       (("--op", "fact"), lambda e: e["op"].startswith("fact.")),
                       (("--record", "person-li-wei"), lambda e: "person-li-wei" in e["records"]),
                       (("--record", "fact-pool"), lambda e: "fact-pool" in e["records"]),
                       (("--record", "broken"), lambda e: "broken" in e["records"]),
                       (("--record", "no-id"), lambda e: "no-id" in e["records"]),
                       (("--actor", "Test Person", "--record", "f-laptop-1", "-n", "1"),
                        lambda e: e["actor"] == "Test Person" and "f-laptop-1" in e["records"])):
        expected = [_log_line(e) for e in commits if keep(e)]
        expected = expected[:1] if "-n" in args else expected
        assert expected, args
        assert am(v, "log", *args).splitlines() == expected, args


def test_history_lines_match_git(long_history: Path) -> None:
    v = long_history
    commits = _commits(v)
    for rid in ("fact-pool", "person-li-wei", "no-id", "f-laptop-1", "fact-cache", "project-alpha", "broken"):
        lines = am(v, "history", rid).splitlines()
        if rid == "fact-cache":
            assert lines.pop(0) == "supersede chain: fact-cache -> fact-cache-2"
        assert lines == _history_lines(v, commits, rid), rid
        versions = json.loads(am(v, "history", rid, "--format", "json"))["versions"]
        assert [x["commit"][:10] for x in versions] == [line[:10] for line in lines], rid
    assert len(am(v, "history", "fact-pool").splitlines()) >= 6


def test_pinned_history_has_every_kind_of_commit(long_history: Path) -> None:
    """The fixture holds what the pins are for: a chmod-only hand commit and a merge bringing in new files."""
    v = long_history
    chmod = run_git(v, "log", "-1", "--format=%H", "--grep=executable").strip()
    assert run_git(v, "diff-tree", "-r", "--raw", "--no-commit-id", f"{chmod}^", chmod).split()[:2] \
        == [":100644", "100755"]
    merge = run_git(v, "log", "-1", "--format=%H", "--merges").strip()
    assert "A\tfacts/laptop/note.md" in run_git(v, "diff-tree", "-r", "--name-status", f"{merge}^1", merge)

