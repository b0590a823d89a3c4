"""am recover and am doctor: lost commits come back, debris of interrupted writes goes away."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from am.cli.main import cli
from am.errors import AmError
from am.vault import Vault

from conftest import PYTHON, fsck_clean, run_git, subprocess_env


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    err = result.exception
    if isinstance(err, AmError):
        return err.exit_code, result.stdout + str(err)
    return result.exit_code, result.stdout


def ok(*args: str) -> str:
    code, out = run(*args)
    assert code == 0, out
    return out


def fact_files(root: Path) -> set[str]:
    return {p for p in run_git(root, "ls-files", "facts").split() if p.endswith(".md")}


def test_reset_hard_then_recover_restores_5_of_5(alpha: Vault, vault_path: Path) -> None:
    base = fact_files(vault_path)
    ids = [alpha.add_fact(f"Fact number {i}.", topics=["project-alpha"], id=f"fact-n{i}").record.id
           for i in range(5)]
    added = fact_files(vault_path) - base
    assert len(added) == 5
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~5")
    assert fact_files(vault_path) == base

    listed = json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))
    assert [c["records"] for c in listed["lost"]] == [[i] for i in ids]
    assert {c["found_by"] for c in listed["lost"]} == {"reflog"}
    assert fact_files(vault_path) == base  # listing changes nothing

    done = json.loads(ok("--vault", str(vault_path), "recover", "--apply", "--format", "json"))
    assert [r["outcome"] for r in done["restored"]] == ["restored"] * 5
    assert fact_files(vault_path) == base | added
    with Vault.open(vault_path) as v:
        assert {f.id for f in v.list_facts()} >= set(ids)
    assert run_git(vault_path, "rev-list", "--merges", "HEAD").strip() == ""
    messages = run_git(vault_path, "log", "-5", "--format=%B%x00").split("\x00")
    lost_ids = {c["commit"] for c in listed["lost"]}
    assert {line.split(": ")[1] for m in messages for line in m.splitlines()
            if line.startswith("Am-Restored-From: ")} == lost_ids
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    fsck_clean(vault_path)
    again = json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))
    assert again["lost"] == []


def test_a_git_revert_lost_with_the_fact_it_undid_is_replayed_after_it(alpha: Vault, vault_path: Path) -> None:
    base = fact_files(vault_path)
    undone = alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-undone").commit
    run_git(vault_path, "revert", "--no-edit", "HEAD")  # the README's undo, made with plain Git
    revert = run_git(vault_path, "rev-parse", "HEAD").strip()
    alpha.add_fact("Pool size is 20.", topics=["project-alpha"], id="fact-kept")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~3")

    listed = json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))
    assert [(c["commit"], c["reverts"]) for c in listed["lost"]] == [
        (undone, None), (revert, undone), (listed["lost"][2]["commit"], None)]
    text = ok("--vault", str(vault_path), "recover")
    assert f"git revert of {undone[:10]}, replayed after it" in text and "2 lost am commits (and 1 git revert of them)" in text

    done = json.loads(ok("--vault", str(vault_path), "recover", "--apply", "--format", "json"))
    assert [r["outcome"] for r in done["restored"]] == ["restored"] * 3
    # The fact the person took back stays taken back; the one after it is restored.
    assert {Path(p).stem for p in fact_files(vault_path) - base} == {"fact-kept"}
    subjects = run_git(vault_path, "log", "-3", "--format=%s").splitlines()
    assert subjects[1].startswith("Revert ") and len(subjects) == 3
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    assert json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))["lost"] == []


def test_recover_without_reflogs_scans_objects(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Kept only as an object.", topics=["project-alpha"], id="fact-object")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    run_git(vault_path, "reflog", "expire", "--expire=now", "--all")
    quick = json.loads(ok("--vault", str(vault_path), "recover", "--reflog-only", "--format", "json"))
    assert quick["lost"] == []
    deep = json.loads(ok("--vault", str(vault_path), "recover", "--apply", "--format", "json"))
    assert [(c["records"], c["found_by"]) for c in deep["lost"]] == [(["fact-object"], "unreachable")]
    with Vault.open(vault_path) as v:
        assert v.get_fact("fact-object").body == "Kept only as an object.\n"


def test_recover_reports_conflicts(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-pool")
    alpha.set_fact_status("fact-pool", "contested", reason="saw 20")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    alpha.set_fact_status("fact-pool", "pending-review", reason="asked for review")
    before = run_git(vault_path, "rev-parse", "HEAD").strip()
    code, out = run("--vault", str(vault_path), "recover", "--apply")
    assert code == 9 and "conflict" in out
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == before


def test_a_lost_edit_never_lands_in_another_facts_file(alpha: Vault, vault_path: Path) -> None:
    """A fact deleted by hand and a look-alike added since (another id) look like a rename to Git's rename
    detection; the lost edit of the first was replayed into the second's file. Now it is a conflict, nothing written."""
    alpha.add_fact("Alpha deploys on Fridays at noon from the release branch.", topics=["project-alpha"], id="fact-a")
    alpha.edit_fact("fact-a", "Alpha deploys on Mondays at noon from the release branch.")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    a = next(p for p in fact_files(vault_path) if p.endswith("/fact-a.md"))
    b = a.replace("fact-a.md", "fact-b.md")
    (vault_path / b).write_text((vault_path / a).read_text().replace("fact-a", "fact-b"))
    run_git(vault_path, "rm", "-q", a)
    run_git(vault_path, "add", b)
    run_git(vault_path, "commit", "-qm", "hand: a gone, b added")
    before, b_text = run_git(vault_path, "rev-parse", "HEAD").strip(), (vault_path / b).read_text()
    code, out = run("--vault", str(vault_path), "recover", "--apply")
    assert code == 9 and "conflict" in out and a in out, out
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == before
    assert (vault_path / b).read_text() == b_text and "Fridays" in b_text


def test_doctor_finds_and_fixes_debris(alpha: Vault, vault_path: Path) -> None:
    from am.records.model import Fact
    from am.records.codec import render_record

    facts = vault_path / "facts" / "2026" / "11" / "01"
    facts.mkdir(parents=True)
    # An orphan in am's canonical form: what a write killed before its commit leaves.
    orphan = Fact(id="fact-orphan", topics=("project-alpha",), body="Left by a killed write.\n",
                  created="2026-11-01T10:00:00+00:00")
    (facts / "fact-orphan.md").write_text(render_record(orphan))
    # A person's note, not canonical: left alone.
    (facts / "fact-person.md").write_text("---\ntype: fact\nid: fact-person\ntopics: [project-alpha]\n"
                                          "status: active\nprovenance: human\nconfidence: low\ncreated: 2026-11-01\n---\nMy draft.\n")
    # A half-written temp file of a dead process.
    dead = subprocess.run([PYTHON, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    temp = facts / f".fact-x.md.am-{dead.stdout.strip()}.tmp"
    temp.write_text("partial")
    # A queued write and an answer left by dead processes (am/git/coord/spool.py).
    queue = vault_path / ".git" / "am" / "queue"
    queue.mkdir(parents=True)
    queued = [queue / f"{dead.stdout.strip()}-0-0a1b2c3d.req", queue / f"{dead.stdout.strip()}-1-0a1b2c3d.done"]
    for item in queued:
        item.write_text("{}")
    # A check memo half written by a check that was killed (am/upkeep/checkmemo.py).
    memo_temp = vault_path / ".git" / "am" / f"check-memo.{dead.stdout.strip()}.0a1b2c3d4e5f.tmp"
    memo_temp.write_text("{}")
    # A stale index.lock.
    lock = vault_path / ".git" / "index.lock"
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))

    code, out = run("--vault", str(vault_path), "doctor", "--format", "json")
    assert code == 1
    kinds = {(f["kind"], Path(f["path"]).name) for f in json.loads(out)["findings"]}
    assert ("orphan", "fact-orphan.md") in kinds
    assert ("uncommitted", "fact-person.md") in kinds
    assert ("temp-file", temp.name) in kinds
    assert {("temp-file", q.name) for q in queued} <= kinds
    assert ("temp-file", memo_temp.name) in kinds
    assert ("stale-lock", "index.lock") in kinds

    code, out = run("--vault", str(vault_path), "doctor", "--fix", "--format", "json")
    data = json.loads(out)
    assert code == 0, out
    assert {(f["kind"], Path(f["path"]).name) for f in data["findings"]} == {("uncommitted", "fact-person.md")}
    assert not lock.exists() and list((vault_path / ".git" / "am" / "stale-locks").iterdir())
    assert not temp.exists() and not any(q.exists() for q in queued) and not memo_temp.exists()
    assert "facts/2026/11/01/fact-orphan.md" in run_git(vault_path, "ls-files")
    assert (facts / "fact-person.md").read_text().endswith("My draft.\n")
    assert run_git(vault_path, "status", "--porcelain").strip() == "?? facts/2026/11/01/fact-person.md"
    fsck_clean(vault_path)


def test_doctor_reports_a_branch_moved_back_and_restores_it(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Will be reset away.", topics=["project-alpha"], id="fact-reset")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    code, out = run("--vault", str(vault_path), "doctor")
    assert code == 1 and "branch-moved-back" in out
    code, out = run("--vault", str(vault_path), "doctor", "--fix")
    assert code == 0 and "restored 1 of 1" in out
    assert any(p.endswith("fact-reset.md") for p in fact_files(vault_path))



def _fact_path(vault_path: Path, fact_id: str) -> Path:
    return next(p for p in (vault_path / "facts").rglob(f"{fact_id}.md"))


@pytest.fixture
def hooked(alpha: Vault, vault_path: Path) -> Vault:
    """Return the alpha vault with am's hooks installed, as a user's vault has them (doctor checks them too)."""
    ok("--vault", str(vault_path), "hooks", "install")
    return alpha


def test_doctor_calls_an_amended_am_commit_a_rewrite_and_fix_leaves_it(hooked: Vault, vault_path: Path) -> None:
    hooked.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-amended")
    amended = run_git(vault_path, "rev-parse", "HEAD").strip()
    path = _fact_path(vault_path, "fact-amended")
    path.write_text(path.read_text().replace("Pool size is 10.", "Pool size is 12."))
    run_git(vault_path, "commit", "-q", "-a", "--amend", "--no-edit")
    tip = run_git(vault_path, "rev-parse", "HEAD").strip()

    code, out = run("--vault", str(vault_path), "doctor", "--format", "json")
    findings = json.loads(out)["findings"]
    assert code == 0, out
    assert [(f["kind"], f["fixable"]) for f in findings] == [("rewritten", False)]
    assert amended[:10] in findings[0]["message"] and "commit --amend" in findings[0]["message"]
    code, out = run("--vault", str(vault_path), "doctor", "--fix")
    assert code == 0 and "fixed" not in out and "repairs it" not in out, out
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == tip
    listed = json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))["lost"]
    assert [(c["commit"], c["rewritten"]) for c in listed] == [(amended, "git commit --amend")]


def test_doctor_fix_does_not_bring_back_a_fact_dropped_in_git_rebase_i(hooked: Vault, vault_path: Path) -> None:
    hooked.add_fact("Dropped on purpose.", topics=["project-alpha"], id="fact-dropped")
    hooked.add_fact("Kept.", topics=["project-alpha"], id="fact-kept")
    run_git(vault_path, "-c", "sequence.editor=sed -i 1s/^pick/drop/", "rebase", "-q", "-i", "HEAD~2")
    assert not any(p.endswith("fact-dropped.md") for p in fact_files(vault_path))

    code, out = run("--vault", str(vault_path), "doctor")
    assert code == 0 and out.startswith("rewritten: ") and "git rebase" in out, out
    code, out = run("--vault", str(vault_path), "doctor", "--fix")
    assert code == 0 and "fixed" not in out, out
    assert not any(p.endswith("fact-dropped.md") for p in fact_files(vault_path))
    out = ok("--vault", str(vault_path), "recover")
    assert "fact-dropped" in out and "rewritten by git rebase" in out


def test_doctor_fix_restores_what_a_reset_lost_after_an_amend(hooked: Vault, vault_path: Path) -> None:
    # The amended original is the user's rewrite; the amended commit and the one after it were lost by a reset.
    hooked.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-amended")
    path = _fact_path(vault_path, "fact-amended")
    path.write_text(path.read_text().replace("Pool size is 10.", "Pool size is 12."))
    run_git(vault_path, "commit", "-q", "-a", "--amend", "--no-edit")
    hooked.add_fact("Written after the amend.", topics=["project-alpha"], id="fact-after")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~2")

    code, out = run("--vault", str(vault_path), "doctor", "--format", "json")
    assert code == 1
    assert {(f["kind"], f["fixable"]) for f in json.loads(out)["findings"]} == {
        ("branch-moved-back", True), ("rewritten", False)}
    code, out = run("--vault", str(vault_path), "doctor", "--fix")
    assert code == 0 and "restored 2 of 2" in out and "could not" not in out, out
    assert "Pool size is 12." in _fact_path(vault_path, "fact-amended").read_text()
    assert any(p.endswith("fact-after.md") for p in fact_files(vault_path))


def test_doctor_does_not_call_a_lost_commit_that_conflicts_fixable(hooked: Vault, vault_path: Path) -> None:
    hooked.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-pool")
    hooked.set_fact_status("fact-pool", "contested", reason="saw 20")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    hooked.set_fact_status("fact-pool", "pending-review", reason="asked for review")
    before = run_git(vault_path, "rev-parse", "HEAD").strip()

    code, out = run("--vault", str(vault_path), "doctor", "--format", "json")
    findings = json.loads(out)["findings"]
    assert code == 1
    assert [(f["kind"], f["fixable"]) for f in findings] == [("lost-conflict", False)]
    assert "am recover" in findings[0]["message"]
    code, out = run("--vault", str(vault_path), "doctor", "--fix")
    assert code == 1 and "fixed" not in out and "repairs it" not in out, out
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == before


# ------------------------------------------------------------------ stale and fresh Git locks during a write


def _add(vault_path: Path, text: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault_path), "fact", "add", text,
                           "--topic", "project-alpha"], capture_output=True, text=True,
                          env=subprocess_env(**env))


@pytest.mark.parametrize("lock_name", ["index.lock", "refs/heads/main.lock"])
def test_stale_git_lock_is_moved_aside_with_a_warning(alpha: Vault, vault_path: Path, lock_name: str) -> None:
    lock = vault_path / ".git" / lock_name
    lock.write_text("")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    before = run_git(vault_path, "rev-parse", "HEAD").strip()
    proc = _add(vault_path, "Written past a stale lock.", AM_GIT_LOCK_STALE="60", AM_GIT_LOCK_WAIT="2")
    assert proc.returncode == 0, proc.stderr
    assert "stale Git lock" in proc.stderr and lock.name in proc.stderr
    assert not lock.exists()
    assert any(p.name.startswith(lock.name) for p in (vault_path / ".git" / "am" / "stale-locks").iterdir())
    assert run_git(vault_path, "rev-parse", "HEAD~1").strip() == before
    assert run_git(vault_path, "status", "--porcelain").strip() == ""


def test_fresh_ref_lock_fails_clearly_and_changes_nothing(alpha: Vault, vault_path: Path) -> None:
    lock = vault_path / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    before = run_git(vault_path, "rev-parse", "HEAD").strip()
    proc = _add(vault_path, "Blocked by a fresh lock.", AM_GIT_LOCK_STALE="600", AM_GIT_LOCK_WAIT="0.5")
    assert proc.returncode == 8, proc.stderr
    assert str(lock) in proc.stderr
    assert lock.exists()
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == before
    # The work-tree file it wrote first was put back: nothing is left behind.
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    lock.unlink()
    assert _add(vault_path, "Next write.").returncode == 0


def test_a_write_that_failed_to_move_the_branch_is_not_recovered(alpha: Vault, vault_path: Path) -> None:
    """Its commit object exists, but its writer was told it failed (exit 8): recover must not replay it."""
    lock = vault_path / ".git" / "refs" / "heads" / "main.lock"
    lock.write_text("")
    proc = _add(vault_path, "Blocked by a fresh lock.", AM_GIT_LOCK_STALE="600", AM_GIT_LOCK_WAIT="0.5")
    assert proc.returncode == 8, proc.stderr
    lock.unlink()
    blocked = [line for line in run_git(vault_path, "fsck", "--unreachable", "--no-reflogs").splitlines()
               if line.startswith("unreachable commit")]
    assert len(blocked) == 1  # the object the failed write left, as git sees it
    assert json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))["lost"] == []
    # A commit really lost (reset away, reflogs expired) is still found by the scan, the failed one still not.
    alpha.add_fact("Kept only as an object.", topics=["project-alpha"], id="fact-object")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    run_git(vault_path, "reflog", "expire", "--expire=now", "--all")
    deep = json.loads(ok("--vault", str(vault_path), "recover", "--format", "json"))
    assert [(c["records"], c["found_by"]) for c in deep["lost"]] == [(["fact-object"], "unreachable")]


def test_fresh_index_lock_refuses_the_write_and_changes_nothing(alpha: Vault, vault_path: Path) -> None:
    # Before issue 36 the write was committed with a warning and Git's index left behind; now the branch
    # moves only together with Git's index, so the write fails (exit 8) and changes nothing.
    lock = vault_path / ".git" / "index.lock"
    lock.write_text("")
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    proc = _add(vault_path, "Not committed while the index is locked.", AM_GIT_LOCK_STALE="600",
                AM_GIT_LOCK_WAIT="0.5")
    assert proc.returncode == 8, proc.stderr
    assert "index.lock" in proc.stderr and "nothing was changed" in proc.stderr
    assert lock.exists()
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head
    lock.unlink()
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    assert _add(vault_path, "Committed once the lock is gone.").returncode == 0
    assert run_git(vault_path, "status", "--porcelain").strip() == ""


def test_an_empty_index_lock_beside_a_dead_writers_note_is_a_git_commands(alpha: Vault, vault_path: Path) -> None:
    # A write killed in its branch move leaves a note (am/git/coord/inflight.py); its own index lock would carry
    # am's mark. An empty index.lock made just then is a git command's, starting: never moved aside.
    import json
    import socket

    dead = subprocess.run([PYTHON, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    note = {"pid": int(dead.stdout), "host": socket.gethostname(), "ref": "refs/heads/main", "tip": head,
            "since": time.time(), "entries": []}
    (vault_path / ".git" / "am").mkdir(exist_ok=True)
    (vault_path / ".git" / "am" / "inflight").write_text(json.dumps(note))
    lock = vault_path / ".git" / "index.lock"
    lock.write_text("")
    proc = _add(vault_path, "Written beside a git command.", AM_GIT_LOCK_STALE="600", AM_GIT_LOCK_WAIT="0.5")
    assert proc.returncode == 8, proc.stderr  # a git command's lock: waited for, then refused (issue 36)
    assert "index.lock" in proc.stderr and "killed am process" not in proc.stderr
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head
    assert lock.exists() and lock.read_text() == ""
    stale = vault_path / ".git" / "am" / "stale-locks"
    assert not stale.exists() or not any(p.name.startswith("index.lock") for p in stale.iterdir())


def test_doctor_reports_a_corrupt_cache_rebuilt(alpha: Vault, vault_path: Path) -> None:
    pytest.importorskip("am.cache.index")
    alpha.close()
    db = vault_path / ".am" / "cache" / "index.sqlite"
    ok("--vault", str(vault_path), "hooks", "install")  # else doctor reports the missing hooks too
    ok("--vault", str(vault_path), "doctor")
    assert db.exists()
    db.write_bytes(b"this is not a database" * 100)
    code, out = run("--vault", str(vault_path), "doctor", "--format", "json")
    kinds = [f["kind"] for f in json.loads(out)["findings"]]
    assert code == 0 and kinds == ["cache-rebuilt"], out
    assert ok("--vault", str(vault_path), "doctor").strip() == "all good"


def test_one_lost_commit_is_said_in_the_singular(alpha: Vault, vault_path: Path) -> None:
    """One lost write was '1 lost am commits' (am recover) and '1 am commits are no longer on any branch' (doctor)."""
    alpha.add_fact("Pool size is 10.", topics=["project-alpha"], id="fact-lost")
    run_git(vault_path, "reset", "-q", "--hard", "HEAD~1")
    assert "1 lost am commit; restore it with: am recover --apply" in ok("--vault", str(vault_path), "recover")
    code, out = run("--vault", str(vault_path), "doctor")
    assert code == 1 and "1 am commit is no longer on any branch" in out and "am recover --apply restores it" in out
