"""An import killed at any step of any batch, then run again, leaves the vault one clean run leaves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import PYTHON, fsck_clean, run_git, subprocess_env
from io_samples import write_sample

from am.git import FAILPOINTS
from am.upkeep.check import check_vault
from am.vault import Vault


def _import(vault: Path, source: Path, system: str = "mcp-memory", **env: str) -> subprocess.CompletedProcess[str]:
    args = [PYTHON, "-m", "am.cli.main", "--vault", str(vault), "--actor", "importer", "import", system,
            str(source), "--batch-size", "3", "--format", "json"]
    return subprocess.run(args, check=False, capture_output=True, text=True, env=subprocess_env(**env))


def _vault(root: Path) -> Path:
    run_git(root.parent, "init", "-q", "-b", "main", str(root))
    Vault.init(root, name="resume", actor="tester", register=False).close()
    return root


def _tree(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD^{tree}").strip()


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("clean")
    sample = write_sample("mcp-memory", folder / "src")
    root = _vault(folder / "vault")
    proc = _import(root, sample.path)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["commits"]) == 4
    return sample.path, _tree(root)


# Two steps in the default suite (files written but not committed; committed but Git's index not updated),
# every step under the stress mark.
_QUICK = ("after-file", "after-commit")


@pytest.mark.parametrize("failpoint", [f if f in _QUICK else pytest.param(f, marks=pytest.mark.stress)
                                       for f in FAILPOINTS])
def test_kill_mid_import_then_rerun(failpoint: str, clean_run: tuple[Path, str], tmp_path: Path) -> None:
    source, clean_tree = clean_run
    root = _vault(tmp_path / "vault")
    killed = _import(root, source, AM_FAILPOINT=failpoint, AM_FAILPOINT_SKIP="1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    committed = int(run_git(root, "rev-list", "--count", "HEAD"))
    assert 2 <= committed <= 3  # vault init, the first batch, perhaps the killed one
    rerun = _import(root, source)
    assert rerun.returncode == 0, rerun.stderr
    assert _tree(root) == clean_tree
    again = _import(root, source)
    assert again.returncode == 0 and json.loads(again.stdout)["commits"] == []
    fsck_clean(root)
    doctor = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "doctor", "--fix"],
                            check=False, capture_output=True, text=True, env=subprocess_env())
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
    with Vault.open(root) as vault:
        report = check_vault(vault)
    assert report.errors == [] and report.warnings == []


@pytest.mark.parametrize("days", [0, 3])
def test_rerun_after_the_source_was_touched(days: int, tmp_path: Path) -> None:
    """Facts without a time of their own take the source's modification time: a rerun after it moved still finishes.

    The killed run left its batch's files uncommitted with the old time (and, a day later, in another day folder);
    the rerun writes them as that run would have, so the vault is one clean run's and holds each id once.
    """
    sample = write_sample("mcp-memory", tmp_path / "src")
    os.utime(sample.path, (1_780_000_000, 1_780_000_000))
    root = _vault(tmp_path / "vault")
    killed = _import(root, sample.path, AM_FAILPOINT="after-file", AM_FAILPOINT_SKIP="1")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = run_git(root, "status", "--porcelain", "--untracked-files=all").split("\n")
    assert any(line.startswith("?? facts/") for line in left)  # the killed batch's files, not committed
    later = 1_780_000_000 + 3600 + days * 86400
    os.utime(sample.path, (later, later))
    rerun = _import(root, sample.path)
    assert rerun.returncode == 0, rerun.stderr
    assert run_git(root, "status", "--porcelain", "--untracked-files=all").strip() == ""
    with Vault.open(root) as vault:
        report = check_vault(vault)
        assert report.errors == [] and report.warnings == [], [i.describe() for i in report.issues]
        assert len(vault.list_facts()) == 5 and len(vault.list_relations()) == 3
    again = _import(root, sample.path)
    assert again.returncode == 0 and json.loads(again.stdout)["commits"] == []


def test_a_different_untracked_file_is_refused_with_a_hint_that_applies(tmp_path: Path) -> None:
    """A file at a new record's path that no commit has and that is not the record is someone's: refused, and the
    hint does not say git checkout -- FILE (which cannot discard a file no commit has)."""
    source = tmp_path / "memory.jsonl"
    source.write_text(json.dumps({"type": "entity", "name": "CI", "entityType": "tool", "observations": []}) + "\n")
    root = _vault(tmp_path / "vault")
    (root / "topics").mkdir(exist_ok=True)
    (root / "topics" / "tool-ci.md").write_text("---\ntype: topic\nid: tool-ci\nkind: tool\ntitle: CI by hand\n"
                                                "status: active\ncreated: 2026-01-05T10:00:00Z\n---\n")
    refused = _import(root, source)
    assert refused.returncode == 7
    assert "topics/tool-ci.md has uncommitted changes" in refused.stderr and "in no commit" in refused.stderr
    assert "checkout" not in refused.stderr
