"""am check's memo (am/upkeep/checkmemo.py): derived data keyed by content, never a reason to miss a finding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT, run_git, subprocess_env
from test_check import fact_text, write  # the same files as am check's own tests

from am.upkeep.check import check_vault
from am.upkeep.checkmemo import MEMO_FILE

DAY = "facts/2026/09/23"


def memo_of(vault_path: Path) -> Path:
    return vault_path / ".git" / "am" / MEMO_FILE


def am(vault_path: Path, *args: str) -> tuple[int, str, str]:
    """Run am check (or another command) as a whole process; return its exit code, stdout and stderr."""
    proc = subprocess.run([sys.executable, "-m", "am.cli.entry", "--vault", str(vault_path), *args],
                          capture_output=True, text=True, env=subprocess_env(AM_HOME=os.environ["AM_HOME"]),
                          cwd=REPO_ROOT, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def rich_vault(vault_path: Path) -> None:
    """Write files that give a finding of most kinds, per file and across files."""
    files = {
        f"{DAY}/f-plain.md": fact_text("f-plain", body="See [[project-alpha]] and [[ghost]], twice: [[ghost]]."),
        f"{DAY}/f-no-status.md": fact_text("f-no-status").replace("status: active\n", ""),
        f"{DAY}/f-bad-conf.md": fact_text("f-bad-conf").replace("medium", "sure"),
        f"{DAY}/f-unknown-topic.md": fact_text("f-unknown-topic", topics="[nowhere]"),
        f"{DAY}/f-a.md": fact_text("f-a", extra="supersedes: [f-b]\nsuperseded_by: f-b\n"),
        f"{DAY}/f-b.md": fact_text("f-b", extra="supersedes: [f-a]\nsuperseded_by: f-a\n"),
        f"{DAY}/f-half.md": fact_text("f-half", extra="supersedes: [f-plain]\n"),
        f"{DAY}/f-broken.md": "---\ntype: fact\nid: [unclosed\n---\nx\n",
        f"{DAY}/f-world.md": fact_text("f-world", extra="repo: nowhere\nversion: main\n"),
        f"{DAY}/Untitled.md": "",
        "facts/2026/09/24/f-dup.md": fact_text("f-dup"),
        "facts/2026/09/25/f-dup.md": fact_text("f-dup"),
        "facts/f-moved.md": fact_text("f-moved"),
        "topics/f-impostor.md": fact_text("f-impostor"),
        "topics/Li Wei.md": "---\ntype: topic\nid: person-li-wei\nkind: person\ntitle: Li Wei\n---\nA person.\n",
        "topics/session-s1.md": "---\ntype: topic\nid: session-s1\nkind: session\ntitle: S1\nfile: /etc/passwd\n"
                                "created: 2026-09-23T12:00:00+08:00\n---\nA session.\n",
        "relations/2026/09/a--likes--b.md": "---\ntype: relation\nid: a--likes--b\nrel: likes\nfrom: project-alpha\n"
                                            "to: b\nstatus: active\n---\n[[project-alpha]] likes [[b]].\n",
        "notes/Reading list.md": "Books: [[Li Wei]], [[nobody]].\n",
    }
    for rel, text in files.items():
        write(vault_path, rel, text)


def test_an_edit_is_checked_again_on_a_warm_run_even_at_the_same_size_and_time(alpha: Any,
                                                                            vault_path: Path) -> None:
    write(vault_path, f"{DAY}/f-x.md", fact_text("f-x", extra="reason: fine\n"))
    assert check_vault(alpha).issues == ()
    assert memo_of(vault_path).is_file()  # the first check kept what it found
    target = vault_path / DAY / "f-x.md"
    before = target.stat()
    text = target.read_bytes()
    edited = text.replace(b"confidence: medium", b"confidence: sure!!")  # same size: a schema error now
    assert len(edited) == len(text)
    target.write_bytes(edited)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the same modification time
    report = check_vault(alpha)
    assert [(i.severity, i.code, i.path, i.field) for i in report.errors] == [
        ("error", "schema", f"{DAY}/f-x.md", "confidence")]
    assert report == check_vault(alpha, memo=False)
    code, out, _ = am(vault_path, "check")
    assert code == 5 and f"{DAY}/f-x.md" in out


def test_deleting_the_memo_changes_no_output(alpha: Any, vault_path: Path) -> None:
    rich_vault(vault_path)
    for args in (["check"], ["check", "--all"], ["check", "--strict", "--format", "json"], ["doctor"]):
        memo_of(vault_path).unlink(missing_ok=True)
        cold = am(vault_path, *args)
        assert memo_of(vault_path).is_file()
        assert am(vault_path, *args) == cold, args  # warm: every file's own findings from the memo
    found = json.loads(am(vault_path, "check", "--format", "json")[1])
    codes = {i["code"] for i in found["issues"]}
    assert {"parse", "schema", "note", "duplicate-id", "wrong-folder", "misplaced", "relation-type", "unknown-topic",
            "dangling-link", "supersede-cycle", "half-supersession", "session-file", "unresolved-world",
            "missing-target"} <= codes, codes
    assert check_vault(alpha) == check_vault(alpha, memo=False)


def _entries(memo: Path) -> tuple[list[bytes], dict[str, Any]]:
    head = memo.read_bytes().split(b"\n", 3)
    return head[:3], json.loads(head[3])


def test_a_hand_corrupted_entry_does_not_hide_an_error(alpha: Any, vault_path: Path) -> None:
    write(vault_path, f"{DAY}/f-bad.md", fact_text("f-bad").replace("medium", "sure"))
    first = check_vault(alpha)
    assert [i.code for i in first.errors] == ["schema"]
    memo = memo_of(vault_path)
    lines, entries = _entries(memo)
    hiding = [key for key, (found, _) in entries.items() if found]
    assert len(hiding) == 1
    entries[hiding[0]][0] = []  # the entry now says the file has nothing wrong
    memo.write_bytes(b"\n".join([*lines, json.dumps(entries, separators=(",", ":")).encode()]))
    assert check_vault(alpha) == first
    code, out, _ = am(vault_path, "check")
    assert code == 5 and "[schema]" in out
    # Damage of another kind: a truncated memo, bytes flipped, a memo that is a folder.
    for damage in (lambda b: b[: len(b) // 2], lambda b: b.replace(b"sure", b"okay"), None):
        check_vault(alpha)
        if damage is None:
            memo.unlink()
            memo.mkdir()
        else:
            memo.write_bytes(damage(memo.read_bytes()))
        assert check_vault(alpha) == first
        if damage is None:
            memo.rmdir()


def test_a_memo_from_another_vault_or_another_am_does_not_hide_an_error(alpha: Any, vault_path: Path,
                                                                        tmp_path: Path) -> None:
    # The same path, clean in one vault and broken in the other: each entry is keyed by the file's bytes.
    write(vault_path, f"{DAY}/f-x.md", fact_text("f-x"))
    assert check_vault(alpha).issues == ()
    clean_memo = memo_of(vault_path).read_bytes()
    write(vault_path, f"{DAY}/f-x.md", fact_text("f-x").replace("status: active", "status: maybe"))
    memo_of(vault_path).write_bytes(clean_memo)
    broken = check_vault(alpha)
    assert [(i.code, i.field) for i in broken.errors] == [("schema", "status")]
    # Another am's memo (its rules fingerprint differs), even one whose digest is right, is set aside whole.
    from am.upkeep import checkmemo

    lines, entries = _entries(memo_of(vault_path))
    for entry in entries.values():
        entry[0] = []
    body = json.dumps(entries, separators=(",", ":")).encode()
    other_rules = "0" * 32
    memo_of(vault_path).write_bytes(b"\n".join([lines[0], other_rules.encode(),
                                                checkmemo._digest(other_rules, body).encode(), body]))
    assert check_vault(alpha) == broken


def test_the_memo_is_kept_under_git_never_in_the_work_tree(alpha: Any, vault_path: Path) -> None:
    rich_vault(vault_path)
    check_vault(alpha)
    assert memo_of(vault_path).is_file()
    status = run_git(vault_path, "status", "--porcelain", "--ignored", "--untracked-files=all")
    assert "check-memo" not in status
