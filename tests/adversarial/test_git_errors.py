"""Clear errors instead of tracebacks or wrong ones (issue 14): one line, cause and fix, documented exit code, nothing changed."""

from __future__ import annotations

import errno
import json
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env

from adversarial._helpers import (
    add_fact,
    am,
    fact_id,
    head_files,
    one_line_error,
    staged_differences,
)
from am.errors import InvalidRecordError
from am.git.staging import Staging
from am.vault import Vault


def _unchanged(root: Path, head: str) -> None:
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_a_sha256_repository_is_named_as_unsupported(tmp_path: Path) -> None:
    repo = tmp_path / "sha"
    run_git(tmp_path, "init", "-q", "--object-format=sha256", str(repo))
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(repo)], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60, check=False)
    line = one_line_error(proc)
    assert proc.returncode == 3 and "sha256" in line.lower() and "not a Git repository" not in line, line
    assert not (repo / ".am").exists()


def test_init_on_a_bare_repository_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    run_git(tmp_path, "init", "-q", "--bare", str(bare))
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(bare)], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60, check=False)
    line = one_line_error(proc)
    assert proc.returncode == 3 and "bare" in line, line
    assert not (bare / ".git").exists() and not (bare / ".am").exists()


def test_a_newer_vault_format_is_refused_for_writes(alpha: Vault) -> None:
    root = alpha.root
    settings = root / ".am" / "vault.yml"
    settings.write_text(settings.read_text().replace("format: 1", "format: 99"))
    run_git(root, "commit", "-qam", "a vault from the future")
    head = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Written to a vault of a newer format.")
    line = one_line_error(proc)
    assert proc.returncode == 2 and "format 99" in line, line
    _unchanged(root, head)


def test_a_newer_vault_format_is_refused_by_every_write_not_only_record_writes(alpha: Vault, tmp_path: Path) -> None:
    # topic rename, undo, obsidian setup, hooks install (.gitattributes), repo add (.am/vault.yml) and
    # recover --apply committed into a vault of a newer format; doctor --fix committed an orphan and replayed
    # a lost write there.
    root = alpha.root
    fact_id(add_fact(root, "A write the branch will lose."))
    run_git(root, "reset", "-q", "--hard", "HEAD~1")
    fid = fact_id(add_fact(root, "An orphan to be."))
    [path] = [p for p in head_files(root) if p.endswith(f"/{fid}.md")]
    saved = (root / path).read_bytes()
    run_git(root, "rm", "-q", path)
    run_git(root, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "gone")
    run_git(root, "config", "--unset", "merge.am.driver", check=False)
    settings = root / ".am" / "vault.yml"
    settings.write_text(settings.read_text().replace("format: 1", "format: 99"))
    run_git(root, "-c", "core.hooksPath=/dev/null", "commit", "-qam", "a vault from the future")
    head = run_git(root, "rev-parse", "HEAD").strip()
    hooks = sorted(p.name for p in (root / ".git" / "hooks").iterdir())
    code = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code))
    run_git(code, "commit", "-q", "--allow-empty", "-m", "c1")
    for args in (("topic", "rename", "project-alpha", "project-beta"), ("undo", "HEAD~1"),
                 ("obsidian", "setup"), ("hooks", "install"), ("repo", "add", "code-x", str(code)),
                 ("recover", "--apply")):
        proc = am(root, *args, AM_HOME=str(tmp_path / "home"))
        line = one_line_error(proc)
        assert proc.returncode == 2 and "format 99" in line and "upgrade am" in line, (args, line)
        _unchanged(root, head)
        assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == hooks
        assert "code-x" not in ((tmp_path / "home" / "registry.yml").read_text()
                                if (tmp_path / "home" / "registry.yml").exists() else "")
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_bytes(saved)
    proc = am(root, "doctor", "--fix")
    said = proc.stdout + proc.stderr
    assert "could not commit 1 orphan" in said and "could not restore" in said and "format 99" in said, said
    assert run_git(root, "rev-parse", "HEAD").strip() == head and (root / path).read_bytes() == saved


def test_a_record_larger_than_reads_accept_is_refused_at_write(alpha: Vault) -> None:
    head = run_git(alpha.root, "rev-parse", "HEAD").strip()
    with pytest.raises(InvalidRecordError, match="at most 1024 KiB"):
        alpha.add_fact("word " * 240_000, topics=["project-alpha"], allow_secrets=True)
    _unchanged(alpha.root, head)


def test_an_autocrlf_clone_is_compared_as_git_compares(alpha: Vault, tmp_path: Path) -> None:
    fid = alpha.add_fact("Line endings differ in the clone.", topics=["project-alpha"]).record.id
    clone = tmp_path / "crlf"
    subprocess.run(["git", "clone", "-q", "-c", "core.autocrlf=true", str(alpha.root), str(clone)], check=True)
    assert b"\r\n" in next(clone.glob(f"facts/**/{fid}.md")).read_bytes()
    assert run_git(clone, "status", "--porcelain").strip() == ""
    proc = am(clone, "fact", "supersede", fid, "Line endings are no reason to refuse.", "--reason", "crlf",
              "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert staged_differences(clone) == ""


def test_an_autocrlf_clone_commits_the_line_ends_the_repository_has(alpha: Vault, tmp_path: Path) -> None:
    fid = alpha.add_fact("Line endings differ in the clone.", topics=["project-alpha"]).record.id
    clone = tmp_path / "crlf"
    subprocess.run(["git", "clone", "-q", "-c", "core.autocrlf=true", str(alpha.root), str(clone)], check=True)
    rel = run_git(clone, "ls-files", "facts").split()[0]
    for command in (["fact", "edit", fid, "Line endings stay as the repository has them."],
                    ["fact", "status", fid, "contested"]):
        proc = am(clone, *command)
        assert proc.returncode == 0, proc.stderr
        # Before: the CRLF that git's checkout filter put in the work tree was committed (the frontmatter's
        # lines; the new text kept LF), so every rewrite in such a clone turned the whole file over in Git.
        blob = subprocess.run(["git", "-C", str(clone), "cat-file", "blob", f"HEAD:{rel}"], check=True,
                              capture_output=True).stdout
        assert b"\r" not in blob, blob
        assert run_git(clone, "status", "--porcelain").strip() == ""


def test_a_damaged_index_checksum_gets_a_hint_and_doctor_rebuilds_it(alpha: Vault) -> None:
    root = alpha.root
    index = root / ".git" / "index"
    data = bytearray(index.read_bytes())
    data[-1] ^= 0xFF
    index.write_bytes(bytes(data))
    head = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Written over a damaged index.")
    line = one_line_error(proc)
    assert "index" in line and "am doctor --fix" in line, line
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    found = am(root, "doctor", "--format", "json")
    assert "Traceback" not in found.stderr, found.stderr
    assert "index-damaged" in {f["kind"] for f in json.loads(found.stdout)["findings"]}
    fixed = am(root, "doctor", "--fix")
    assert fixed.returncode == 0 and "Traceback" not in fixed.stderr, fixed.stderr
    fact_id(add_fact(root, "Written once the index is rebuilt."))
    assert staged_differences(root) == ""


def test_a_split_index_is_refused_clearly(alpha: Vault) -> None:
    root = alpha.root
    run_git(root, "update-index", "--split-index")
    head = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Written over a split index.")
    line = one_line_error(proc)
    assert proc.returncode == 11 and "split index" in line and "--no-split-index" in line, line
    _unchanged(root, head)


def test_a_sparse_index_is_refused_clearly(alpha: Vault) -> None:
    root = alpha.root
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("outside the sparse cone\n")
    run_git(root, "add", "docs")
    run_git(root, "commit", "-qm", "docs")
    run_git(root, "sparse-checkout", "set", "--cone", "--sparse-index", "facts", "topics", "relations", ".am")
    head = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Written over a sparse index.")
    line = one_line_error(proc)
    assert proc.returncode == 11 and "sparse index" in line, line
    assert run_git(root, "rev-parse", "HEAD").strip() == head



def test_a_sparse_checkout_without_the_facts_folder_is_reported_and_refused(alpha: Vault) -> None:
    root = alpha.root
    kept = fact_id(add_fact(root, "Hidden by the sparse checkout."))
    run_git(root, "sparse-checkout", "set", "--cone", "topics", "relations", ".am")  # no sparse index: am allows it
    assert not (root / "facts").exists()
    head = run_git(root, "rev-parse", "HEAD").strip()

    proc = am(root, "fact", "list")  # a read: it would list no facts
    line = one_line_error(proc)
    assert proc.returncode == 11 and "sparse checkout" in line and "facts/" in line, line
    assert "git sparse-checkout add facts" in proc.stderr and "git sparse-checkout disable" in proc.stderr
    proc = add_fact(root, "Written into a sparse checkout.")  # a write: refused, nothing changed
    assert proc.returncode == 11 and "git sparse-checkout add facts" in proc.stderr, proc.stderr
    _unchanged(root, head)

    proc = am(root, "check", "--format", "json")
    errors = [i for i in json.loads(proc.stdout)["issues"] if i["severity"] == "error"]
    assert proc.returncode != 0 and [(i["code"], i["path"]) for i in errors] == [("sparse-checkout", "facts")], errors
    assert "git sparse-checkout add facts" in errors[0]["message"]
    proc = am(root, "doctor", "--format", "json")
    findings = [f for f in json.loads(proc.stdout)["findings"] if not f["kind"].startswith("hook-")]
    assert proc.returncode == 1 and {f["kind"] for f in findings} == {"check"}, findings  # not "missing", not cache
    assert "git sparse-checkout add facts" in findings[0]["message"]

    run_git(root, "sparse-checkout", "add", "facts")
    assert kept in am(root, "fact", "list").stdout


def test_a_sparse_checkout_that_leaves_dot_am_out_names_it_instead_of_no_vault(alpha: Vault) -> None:
    """Without .am/vault.yml on disk the folder looked like no vault: "create one with: am init", which refused oddly."""
    root = alpha.root
    kept = fact_id(add_fact(root, "Kept while .am/ is left out."))
    run_git(root, "sparse-checkout", "set", "--cone", "facts", "topics", "relations")
    assert not (root / ".am" / "vault.yml").exists() and "S .am/vault.yml" in run_git(root, "ls-files", "-t", ".am")
    head = run_git(root, "rev-parse", "HEAD").strip()
    inside = subprocess.run([PYTHON, "-m", "am.cli.main", "fact", "list"], cwd=root / "facts", capture_output=True,
                            text=True, env=subprocess_env(), check=False)
    for proc in (inside, am(root, "fact", "list"), am(root, "init", str(root))):
        line = one_line_error(proc)
        assert proc.returncode != 0 and "sparse checkout" in line and ".am/" in line, line
        assert "git sparse-checkout add .am" in proc.stderr and "git sparse-checkout disable" in proc.stderr
        assert "am init" not in proc.stderr
    _unchanged(root, head)
    run_git(root, "sparse-checkout", "add", ".am")
    assert kept in am(root, "fact", "list").stdout


def test_a_sparse_checkout_that_keeps_the_record_folders_or_is_disabled_works(alpha: Vault) -> None:
    root = alpha.root
    (root / "docs").mkdir()
    (root / "docs" / "a.txt").write_text("outside the sparse cone\n")
    run_git(root, "add", "docs")
    run_git(root, "commit", "-qm", "docs")
    run_git(root, "sparse-checkout", "set", "--cone", "facts", "topics", "relations", ".am")
    first = fact_id(add_fact(root, "Written in a sparse checkout that keeps the records."))
    run_git(root, "sparse-checkout", "set", "--cone", "topics", ".am")
    assert add_fact(root, "Refused.").returncode == 11
    run_git(root, "sparse-checkout", "disable")  # the file stays; the setting and the bits go
    assert (root / ".git" / "info" / "sparse-checkout").exists()
    second = fact_id(add_fact(root, "Written after the sparse checkout was turned off."))
    listed = am(root, "fact", "list").stdout
    assert first in listed and second in listed


def test_a_file_where_a_folder_goes_is_one_line(alpha: Vault) -> None:
    root = alpha.root
    (root / "facts").mkdir(exist_ok=True)
    (root / "facts" / "2031").write_text("a file where am needs a folder\n")
    head = run_git(root, "rev-parse", "HEAD").strip()
    proc = add_fact(root, "Written where a file is in the way.", AM_NOW="2031-05-06T07:08:09+00:00")
    line = one_line_error(proc)
    assert proc.returncode == 12 and "folder" in line, line
    assert run_git(root, "rev-parse", "HEAD").strip() == head


def test_undecodable_arguments_are_one_line(alpha: Vault) -> None:
    proc = subprocess.run([PYTHON.encode(), b"-m", b"am.cli.main", b"--vault", str(alpha.root).encode(), b"fact",
                           b"add", b"caf\xe9 in latin-1", b"--topic", b"project-alpha"], capture_output=True,
                          env=subprocess_env(), timeout=60, check=False)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "Traceback" not in err and "UTF-8" in err, err


def _limited(limit: int) -> Any:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return set_limit


def test_efbig_is_one_line_and_doctor_does_not_restore_the_failed_write(alpha: Vault) -> None:
    root = alpha.root
    alpha.add_fact("A fact written before the limit.", topics=["project-alpha"])
    head = run_git(root, "rev-parse", "HEAD").strip()
    before = head_files(root, "facts")
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "fact", "add", "x" * 5000,
                           "--topic", "project-alpha"], capture_output=True, text=True, env=subprocess_env(),
                          timeout=60, preexec_fn=_limited(4096), check=False)
    line = one_line_error(proc)
    assert proc.returncode == 12 and "too large" in line.lower(), line
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    fixed = am(root, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stderr
    assert head_files(root, "facts") == before, "doctor restored a write that was reported as failed"
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_a_commit_whose_index_update_fails_is_reported_as_done(alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    root = alpha.root

    def disk_full(self: Staging, staged: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Staging, "_install_staged", disk_full)
    result = alpha.add_fact("Committed, then the index could not be written.", topics=["project-alpha"])
    assert run_git(root, "rev-parse", "HEAD").strip() == result.commit
    monkeypatch.undo()
    alpha.add_fact("The next write.", topics=["project-alpha"])
    assert staged_differences(root) == ""
    assert len(run_git(root, "log", "--format=%s", "--grep", "Committed, then").splitlines()) == 1


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          check=False)
    if proc.returncode != 0:
        print(f"cannot mount a tmpfs here ({proc.stderr.decode().strip()}): skipping")
    return proc.returncode == 0


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    mnt = tmp_path / "disk"
    if not _mount_tmpfs(mnt, "4m"):
        pytest.skip("mounting a file system needs root (CI runs as root)")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _vault_on(folder: Path) -> Path:
    root = folder / "vault"
    run_git(folder, "init", "-q", "-b", "main", str(root))
    run_git(root, "config", "user.name", "Test Person")
    run_git(root, "config", "user.email", "person@example.com")
    v = Vault.init(root, name="disk", actor="tester", register=False)
    v.add_topic(title="Alpha", kind="project", id="project-alpha")
    v.close()
    return root


def test_enospc_is_one_line_nothing_changed_and_doctor_keeps_it_failed(small_disk: Path) -> None:
    root = _vault_on(small_disk)
    head = run_git(root, "rev-parse", "HEAD").strip()
    filler = small_disk / "filler"
    # Unbuffered: a buffered file's last partial chunk would be flushed (and fail) on close.
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    proc = add_fact(root, "Written on a full disk. " * 40)
    line = one_line_error(proc)
    assert proc.returncode == 12 and "space" in line.lower(), line
    assert run_git(root, "rev-parse", "HEAD").strip() == head
    filler.unlink()
    fixed = am(root, "doctor", "--fix")
    assert fixed.returncode == 0, fixed.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == head, "doctor restored a write that was reported as failed"


def test_a_read_only_file_system_is_one_line(small_disk: Path) -> None:
    root = _vault_on(small_disk)
    head = run_git(root, "rev-parse", "HEAD").strip()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        proc = add_fact(root, "Written on a read-only disk.")
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    line = one_line_error(proc)
    assert proc.returncode in (8, 12) and "read-only" in line.lower(), line
    assert run_git(root, "rev-parse", "HEAD").strip() == head


def test_an_immutable_git_folder_is_one_line_and_nothing_changed(alpha: Vault) -> None:
    root = alpha.root
    gitdir = root / ".git"
    if subprocess.run(["chattr", "+i", str(gitdir)], capture_output=True, check=False).returncode != 0:
        print("chattr +i is not permitted here: skipping")
        pytest.skip("setting the immutable attribute needs root on a file system that has it")
    try:
        head = run_git(root, "rev-parse", "HEAD").strip()
        proc = add_fact(root, "Written under an immutable .git.", AM_GIT_LOCK_WAIT="0.5")
    finally:
        subprocess.run(["chattr", "-i", str(gitdir)], check=False)
    line = one_line_error(proc)
    assert proc.returncode == 12 and "not permitted" in line, line
    _unchanged(root, head)


def test_a_failed_branch_move_leaves_no_reflog_entry_for_doctor_to_restore(alpha: Vault) -> None:
    # libgit2 appends the reflog lines (the branch's and HEAD's) before it renames the branch's lock
    # into place; when that rename fails (a full disk, an immutable ref file), the reflog named a
    # commit the branch never had, and doctor --fix / recover --apply brought back a failed write.
    root = alpha.root
    alpha.close()
    ref = root / ".git" / "refs" / "heads" / "main"
    assert ref.is_file()
    if subprocess.run(["chattr", "+i", str(ref)], capture_output=True, check=False).returncode != 0:
        print("chattr +i is not permitted here: skipping")
        pytest.skip("setting the immutable attribute needs root on a file system that has it")
    head = run_git(root, "rev-parse", "HEAD").strip()
    reflogs = {name: run_git(root, "reflog", "show", "--format=%H", name) for name in ("HEAD", "main")}
    try:
        proc = add_fact(root, "A write whose branch move fails.", AM_GIT_LOCK_WAIT="0.5")
    finally:
        subprocess.run(["chattr", "-i", str(ref)], check=False)
    assert proc.returncode != 0, proc.stdout
    one_line_error(proc)
    _unchanged(root, head)
    assert {name: run_git(root, "reflog", "show", "--format=%H", name) for name in reflogs} == reflogs
    # (Its commit object stays, unreachable: only recover's scan of every object can still list it.)
    listed = json.loads(am(root, "recover", "--format", "json").stdout)
    assert [c for c in listed["lost"] if c["found_by"] == "reflog"] == [], listed
    assert am(root, "doctor", "--fix").returncode == 0
    _unchanged(root, head)


def test_a_full_disk_at_the_branch_move_is_a_storage_error(alpha: Vault, tmp_path: Path) -> None:
    # The branch's folder on a full file system of its own: objects and reflogs are written, and the disk
    # fills exactly at the ref's lock file. Exit 12 with the fix, as ENOSPC anywhere else; no reflog entry.
    root = alpha.root
    alpha.close()
    heads = root / ".git" / "refs" / "heads"
    tip = (heads / "main").read_bytes()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(heads)], capture_output=True,
                      check=False).returncode != 0:
        print("cannot mount a tmpfs here: skipping")
        pytest.skip("mounting a file system needs root (CI runs as root)")
    try:
        (heads / "main").write_bytes(tip)
        with open(heads / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 512)
            except OSError:
                pass
        head = run_git(root, "rev-parse", "HEAD").strip()
        proc = add_fact(root, "Written when the branch's disk is full.", AM_GIT_LOCK_WAIT="0.5")
        (heads / "filler").unlink()
        line = one_line_error(proc)
        assert proc.returncode == 12 and "no space left" in line.lower() and "free some disk space" in line, line
        _unchanged(root, head)
        doctor = json.loads(am(root, "doctor", "--format", "json").stdout)
        assert [f for f in doctor["findings"] if f["kind"] == "branch-moved-back"] == [], doctor
        assert fact_id(add_fact(root, "The next write, once there is space."))
    finally:
        subprocess.run(["umount", "-l", str(heads)], check=False)
