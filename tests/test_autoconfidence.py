"""A first confidence read from the words (issue 41: SuperMemory's weighting, as an optional default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from am.records.autoconfidence import guess_confidence
from tests.conftest import run_git, subprocess_env

PYTHON = sys.executable


@pytest.mark.parametrize(("text", "level"), [
    ("Maybe the cache TTL is 30 minutes.", "low"),  # a hedge wins over an exact number
    ("Is the queue drained before deploys?", "low"),
    ("部署可能在周二。", "low"),
    ("Writes must go through the primary.", "high"),
    ("The p99 of getUser is 40 ms.", "high"),
    ("Config lives in `src/config.py`.", "high"),
    ("强一致读必须显式传 consistent=True。", "high"),
    ("The team likes tea.", "medium"),
    ("Deploys happen on Tuesdays.", "medium"),
])
def test_rules(text: str, level: str) -> None:
    assert guess_confidence(text)[0] == level


def test_the_vault_setting_and_the_flag(tmp_path: Path, am_home: Path) -> None:
    vault = tmp_path / "v"
    env = subprocess_env(AM_HOME=str(am_home))

    def add(text: str, *extra: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault), "fact", "add", text, "--topic",
                               "ops", "--create-topic", "--format", "json", *extra], capture_output=True, text=True,
                              env=env, check=False)
        assert proc.returncode == code, proc.stderr
        return proc

    def level(proc: subprocess.CompletedProcess[str]) -> str:
        return str(json.loads(proc.stdout)["records"][0]["confidence"])

    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(vault)], check=True, capture_output=True, env=env)
    assert level(add("Maybe it is Tuesday.")) == "medium"  # the default stays medium
    assert level(add("Maybe it is Wednesday.", "--confidence", "auto")) == "low"
    settings = vault / ".am" / "vault.yml"
    settings.write_text(settings.read_text() + "confidence: auto\n")
    run_git(vault, "commit", "-qam", "confidence: auto")
    assert level(add("Deploys must be tagged.")) == "high"
    assert level(add("Deploys must be signed.", "--confidence", "low")) == "low"  # the writer's word wins
    settings.write_text(settings.read_text().replace("confidence: auto", "confidence: sure"))
    run_git(vault, "commit", "-qam", "a bad setting")
    bad = add("Anything.", code=5)
    assert ".am/vault.yml" in bad.stderr and "sure" in bad.stderr and "Traceback" not in bad.stderr
