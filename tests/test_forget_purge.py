"""Forgetting on purpose (issue 38.4): `am fact forget` (a tombstone, history keeps the text) and
`am purge` (no commit, object or reflog keeps it), with a published vault and a second clone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import fsck_clean, run_git, subprocess_env
from tests.gitserver import make_bare

PYTHON = sys.executable
SECRET = "hunter2-zebra-quartz"
TEXT = f"The staging admin password is {SECRET}, rotated monthly by the on-call engineer."


def am(vault: Path, *args: str, code: int = 0, home: Path) -> str:
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault), *args], capture_output=True, text=True,
                          check=False, env=subprocess_env(AM_HOME=str(home), AM_ACTOR="tester"))
    assert proc.returncode == code, (args, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stdout + proc.stderr


def _add(vault: Path, text: str, home: Path, *extra: str) -> str:
    out = am(vault, "fact", "add", text, "--topic", "ops", "--create-topic", "--format", "json", *extra, home=home)
    return str(json.loads(out.split("\n{", 1)[-1] if not out.startswith("{") else out)["records"][0]["id"])


def _everywhere(root: Path) -> bytes:
    """Every byte Git keeps: the log with patches of every ref, and every object, reachable or not."""
    log = subprocess.run(["git", "log", "-p", "--all", "--format=%H%n%B"], cwd=root, capture_output=True,
                         check=True).stdout
    objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root, capture_output=True,
                             check=True).stdout
    unreachable = subprocess.run(["git", "fsck", "--unreachable", "--no-reflogs"], cwd=root, capture_output=True,
                                 check=True).stdout
    return log + objects + unreachable


@pytest.fixture
def vault(tmp_path: Path, am_home: Path) -> Path:
    root = tmp_path / "vault"
    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(root)], check=True, capture_output=True,
                   env=subprocess_env(AM_HOME=str(am_home)))
    return root


def test_forget_keeps_the_record_and_takes_the_text_out_of_what_am_reads(vault: Path, am_home: Path) -> None:
    keep = _add(vault, "Deploys happen on Tuesdays.", am_home)
    fid = _add(vault, TEXT, am_home, "--allow-secret")
    before = int(run_git(vault, "rev-list", "--count", "HEAD"))
    out = am(vault, "fact", "forget", fid, "--reason", "a password pasted by mistake", home=am_home)
    assert f"am purge {fid}" in out  # says that history still holds it, and what removes it
    assert int(run_git(vault, "rev-list", "--count", "HEAD")) == before + 1
    shown = json.loads(am(vault, "fact", "show", fid, "--format", "json", home=am_home))
    assert shown["status"] == "expired" and shown["body"].startswith("[forgotten] by tester")
    assert "a password pasted by mistake" in shown["body"] and SECRET not in json.dumps(shown)
    assert SECRET not in am(vault, "search", SECRET, "--include-superseded", home=am_home)
    assert SECRET not in am(vault, "slice", "--max-tokens", "0", "--include-pending", home=am_home)
    assert keep in am(vault, "slice", "--max-tokens", "0", home=am_home)
    assert SECRET.encode() in _everywhere(vault)  # forgetting is not purging: history keeps it
    am(vault, "fact", "forget", fid, "--reason", "again", code=2, home=am_home)


def test_purge_then_prune_leaves_no_byte_of_the_text_anywhere_in_git(vault: Path, am_home: Path) -> None:
    keep = _add(vault, "Deploys happen on Tuesdays.", am_home)
    fid = _add(vault, TEXT, am_home, "--allow-secret")
    later = _add(vault, "The on-call rota lives in the wiki.", am_home)
    found = json.loads(am(vault, "check", "--secrets", "--format", "json", code=1, home=am_home))["secrets"]
    assert {s["record"] for s in found} == {fid} and all(SECRET not in s["excerpt"] for s in found)
    am(vault, "purge", fid, code=2, home=am_home)  # no reason: refused, nothing changed
    out = json.loads(am(vault, "purge", fid, "--reason", "a password pasted", "--format", "json", home=am_home))
    assert out["ids"] == [fid] and out["rewritten"] >= 2 and out["backup"]
    assert SECRET.encode() in _everywhere(vault)  # the backup ref and the reflog keep it until --prune
    am(vault, "purge", "--prune", home=am_home)
    everything = _everywhere(vault)
    assert SECRET.encode() not in everything and TEXT.encode() not in everything
    assert b"The staging admin password is" not in everything  # the commit subject's summary too
    fsck_clean(vault)
    assert run_git(vault, "status", "--porcelain") == ""
    # The other facts and their history are intact; the record is a tombstone; the audit names no text.
    listed = {f["id"]: f for f in json.loads(am(vault, "fact", "list", "--format", "json", home=am_home))}
    assert {keep, fid, later} <= set(listed) and listed[fid]["body"].startswith("[forgotten]")
    assert "Tuesdays" in run_git(vault, "log", "-p", "--all")
    audit = (vault / ".am" / "purges.jsonl").read_text()
    assert fid in audit and "a password pasted" in audit and SECRET not in audit
    am(vault, "check", home=am_home)
    assert json.loads(am(vault, "check", "--secrets", "--format", "json", home=am_home))["secrets"] == []


def test_a_published_purge_is_refused_then_followed_by_the_remote_and_a_second_clone(
        vault: Path, am_home: Path, tmp_path: Path) -> None:
    (tmp_path / "server").mkdir()
    bare = make_bare(tmp_path / "server")
    fid = _add(vault, TEXT, am_home, "--allow-secret")
    am(vault, "sync", "--set-upstream", str(bare), home=am_home)
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "-q", str(bare), str(other))
    refused = am(vault, "purge", fid, "--reason", "password", code=2, home=am_home)
    assert "a remote already has" in refused and "--published" in refused
    out = am(vault, "purge", fid, "--reason", "password", "--published", home=am_home)
    assert "git push --force-with-lease origin main" in out and "on every other clone" in out
    # Not yet pushed: am sync here does not merge the remote's old history back.
    told = am(vault, "sync", code=am_exit_conflict(), home=am_home)
    assert "git push --force-with-lease" in told
    assert SECRET.encode() not in subprocess.run(["git", "log", "-p", "main"], cwd=vault, capture_output=True,
                                                 check=True).stdout
    run_git(bare, "config", "receive.denyNonFastForwards", "false")  # the server lets this one rewrite in
    run_git(vault, "push", "-q", "--force-with-lease", "origin", "main")
    # The second clone still holds the text: its am sync stops and says what to do, and changes nothing.
    head = run_git(other, "rev-parse", "HEAD")
    said = am(other, "sync", code=_git_error(), home=am_home)  # seen at the fetch: the remote was rewritten
    assert "was purged" in said and "git reset --keep origin/main" in said
    assert run_git(other, "rev-parse", "HEAD") == head
    run_git(other, "fetch", "-q")
    run_git(other, "reset", "-q", "--keep", "origin/main")
    am(other, "purge", "--prune", home=am_home)
    am(other, "sync", home=am_home)
    assert SECRET.encode() not in _everywhere(other)


def am_exit_conflict() -> int:
    from am.errors import ConflictError

    return int(ConflictError("x").exit_code)


def _git_error() -> int:
    from am.errors import GitError

    return int(GitError("x").exit_code)
