"""Symbolic links and special files in a vault are never followed or read as records (issue 14).

Before: a committed ``facts/…/x.md -> /elsewhere/file.md`` (or ``facts ->
/elsewhere``) showed the outside file's content in list, search and slice; a
link to ``/dev/zero`` exhausted memory; a FIFO hung every command. Now only a
regular file reached without following any link is read, up to the size cap
checked before reading; a link is what Git stores (a link, not a record), and
`am check` reports each such entry.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from am.errors import InvalidRecordError
from am.vault import Vault
from tests.conftest import PYTHON, run_git, subprocess_env

SECRET = "OUTSIDE-THE-VAULT"
DAY = "facts/2026/09/23"


def record(fid: str, *, rtype: str = "fact") -> str:
    if rtype == "topic":
        return f"---\ntype: topic\nid: {fid}\nkind: project\ntitle: {SECRET} title\n---\n{SECRET} topic body.\n"
    return (f"---\ntype: fact\nid: {fid}\ntopics: [project-alpha]\nstatus: active\nconfidence: high\n"
            f"provenance: human\ncreated: 2026-09-23T12:00:00+08:00\n---\n{SECRET}: the fact {fid}.\n")


def am(vault_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run am in a child process with 1 GiB of address space, so a read of /dev/zero fails fast."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault_path), *args], capture_output=True, check=False,
                          text=True, timeout=timeout, env=subprocess_env(), preexec_fn=limit)


def everything(vault_path: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run every reading command once; return each command's result."""
    return {
        "list": am(vault_path, "fact", "list", "--format", "json"),
        "topics": am(vault_path, "topic", "list", "--format", "json"),
        "search": am(vault_path, "search", SECRET, "--format", "json"),
        "slice": am(vault_path, "slice", "--format", "json"),
        "status": am(vault_path, "index", "status", "--format", "json"),
        "check": am(vault_path, "check", "--format", "json"),
        "doctor": am(vault_path, "doctor", "--format", "json"),
    }


def assert_nothing_from_outside(results: dict[str, subprocess.CompletedProcess[str]]) -> None:
    for name, proc in results.items():
        assert "Traceback" not in proc.stderr, (name, proc.stderr)
        if name == "search":  # it says what it looked for
            assert json.loads(proc.stdout)["hits"] == [], proc.stdout
        else:
            assert SECRET not in proc.stdout, (name, proc.stdout)
        if name not in ("check", "doctor"):
            assert proc.returncode == 0, (name, proc.stderr)
    facts = [f["id"] for f in json.loads(results["list"].stdout)]
    assert facts == ["fact-real"], facts


@pytest.fixture
def seeded(alpha: Vault, vault_path: Path, tmp_path: Path) -> Path:
    alpha.add_fact("A real fact about Alpha.", topics=["project-alpha"], id="fact-real")
    alpha.close()
    outside = tmp_path / "outside"
    (outside / "2026/09/23").mkdir(parents=True)
    (outside / "secret.md").write_text(record("fact-outside"))
    (outside / "2026/09/23/fact-outside.md").write_text(record("fact-outside"))
    (outside / "project-alpha.md").write_text(record("project-alpha", rtype="topic"))
    return outside


def check_issues(results: dict[str, subprocess.CompletedProcess[str]]) -> dict[str, set[str]]:
    report = json.loads(results["check"].stdout)
    out: dict[str, set[str]] = {}
    for issue in report["issues"]:
        out.setdefault(issue["code"], set()).add(issue["path"])
    return out


def test_a_committed_link_to_a_file_outside(seeded: Path, vault_path: Path) -> None:
    (vault_path / DAY).mkdir(parents=True, exist_ok=True)
    os.symlink(seeded / "secret.md", vault_path / DAY / "fact-outside.md")
    os.symlink(seeded / "project-alpha.md", vault_path / "topics/project-beta.md")
    run_git(vault_path, "add", "-A")
    run_git(vault_path, "commit", "-q", "-m", "links out")
    assert run_git(vault_path, "ls-files", "-s", f"{DAY}/fact-outside.md").startswith("120000")  # Git: a link
    results = everything(vault_path)
    assert_nothing_from_outside(results)
    issues = check_issues(results)
    assert {f"{DAY}/fact-outside.md", "topics/project-beta.md"} <= issues["not-a-file"], issues
    invalid = {i["path"] for i in json.loads(results["status"].stdout)["invalid"]}
    assert f"{DAY}/fact-outside.md" in invalid
    # A committed link is not an uncommitted change: the cache's blob is the link, as Git's.
    assert json.loads(results["status"].stdout)["uncommitted"] == []


def test_a_record_folder_that_is_a_link(seeded: Path, vault_path: Path) -> None:
    os.symlink(seeded, vault_path / "relations")
    facts = vault_path / DAY
    facts.mkdir(parents=True, exist_ok=True)
    os.symlink(seeded / "2026/09/23", vault_path / "facts/2026/09/24")  # a day folder linked out
    results = everything(vault_path)
    assert_nothing_from_outside(results)
    assert "relations" in check_issues(results)["not-a-file"]


def test_a_link_inside_the_vault_is_a_link_not_a_record(seeded: Path, vault_path: Path) -> None:
    (vault_path / DAY).mkdir(parents=True, exist_ok=True)
    os.symlink("../../../../topics/project-alpha.md", vault_path / DAY / "project-alpha.md")
    results = everything(vault_path)
    assert_nothing_from_outside(results)
    topics = json.loads(results["topics"].stdout)
    assert [t["id"] for t in topics] == ["project-alpha"]  # one topic, from its own file
    issues = check_issues(results)
    assert f"{DAY}/project-alpha.md" in issues["not-a-file"]
    assert "duplicate-id" not in issues


def test_special_files_are_not_read(seeded: Path, vault_path: Path) -> None:
    day = vault_path / DAY
    day.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/zero", day / "fact-zero.md")
    os.mkfifo(day / "fact-pipe.md")
    (day / "fact-big.md").write_bytes(record("fact-big").encode() + b"x" * (2 << 20))
    results = everything(vault_path)  # each command has a timeout: a FIFO must not hang one
    assert_nothing_from_outside(results)
    issues = check_issues(results)
    assert {f"{DAY}/fact-zero.md", f"{DAY}/fact-pipe.md"} <= issues["not-a-file"], issues
    assert issues["too-large"] == {f"{DAY}/fact-big.md"}
    # Once the cache knows them, later commands stay fast and quiet too.
    again = am(vault_path, "fact", "list", "--format", "json", timeout=30)
    assert again.returncode == 0 and [f["id"] for f in json.loads(again.stdout)] == ["fact-real"]
    assert (vault_path / DAY / "fact-pipe.md").is_fifo()


def test_vault_settings_that_are_a_link(alpha: Vault, vault_path: Path, tmp_path: Path) -> None:
    alpha.close()
    settings = vault_path / ".am/vault.yml"
    outside = tmp_path / "outside-vault.yml"
    outside.write_text("name: outside-name\nformat: 1\n")
    settings.unlink()
    os.symlink(outside, settings)
    with pytest.raises(InvalidRecordError, match="symbolic link"):
        Vault.open(vault_path)
    proc = am(vault_path, "fact", "list")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr and "symbolic link" in proc.stderr, proc.stderr
