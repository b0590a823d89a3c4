"""The CI recipes in docs/ci/ run as written on a local clone (issue 37.4).

Each workflow's own commands are taken from the YAML file and run by bash in a clone of a
code repository, with the vault cloned where the recipe clones it. Only what needs the
network is stood in for: installing am (this checkout is used), cloning the vault from the
forge (a local clone), and posting the comment (`gh` / `curl` shims that record what they
were asked to post).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import commit_file, run_git, subprocess_env

DOCS = Path(__file__).resolve().parent.parent / "docs" / "ci"
PYTHON = sys.executable


def _shim(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def forge(tmp_path: Path, am_home: Path) -> dict[str, Path]:
    """An upstream code repository with main and feat, a vault naming it, a CI checkout, and shims."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    run_git(upstream, "init", "-q", "-b", "main")
    commit_file(upstream, "a.py")
    run_git(upstream, "checkout", "-q", "-b", "feat")
    commit_file(upstream, "limits.py")
    run_git(upstream, "checkout", "-q", "main")
    vault = tmp_path / "vault"
    env = subprocess_env(AM_HOME=str(am_home))
    am = [PYTHON, "-m", "am.cli.main"]
    subprocess.run([*am, "init", str(vault)], check=True, capture_output=True, env=env)
    subprocess.run([*am, "--vault", str(vault), "repo", "add", "project-alpha", str(upstream)], check=True,
                   capture_output=True, env=env)
    feat = run_git(upstream, "rev-parse", "feat").strip()
    subprocess.run([*am, "--vault", str(vault), "fact", "add", "feat adds a token bucket in limits.py.", "--topic",
                    "alpha", "--create-topic", "--repo", "project-alpha", "--branch", "feat", "--commit", feat],
                   check=True, capture_output=True, env=env)
    work = tmp_path / "work"
    run_git(tmp_path, "clone", "-q", str(upstream), str(work))
    run_git(work, "checkout", "-q", "--detach", "origin/feat")  # CI checks out the change, detached
    run_git(tmp_path, "clone", "-q", str(vault), str(work / ".memory"))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    posted = tmp_path / "posted.jsonl"
    _shim(bin_, "am", f'exec "{PYTHON}" -m am.cli.main "$@"')
    record = f'"{PYTHON}" -c "import json,sys; open(\'{posted}\',\'a\').write(json.dumps(sys.argv[1:])+chr(10))" "$@"'
    _shim(bin_, "gh", record)
    _shim(bin_, "curl", record)
    ci_home = tmp_path / "ci-home"  # the CI machine is a fresh one: no vault or repo registered yet
    ci_home.mkdir()
    return {"work": work, "bin": bin_, "posted": posted, "home": ci_home}


_OFFLINE = re.compile(r"^(pip install|git clone)\b")


def _run(script: str, forge: dict[str, Path], extra: dict[str, str]) -> None:
    lines = [line for line in script.splitlines() if not _OFFLINE.match(line.strip())]
    env = subprocess_env(AM_HOME=str(forge["home"]), **extra)
    env["PATH"] = f"{forge['bin']}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=forge["work"], capture_output=True, text=True,
                          check=False, env=env)
    assert proc.returncode == 0, (script, proc.stdout, proc.stderr)


def _expand(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: values.get(m.group(1), "x"), text)


def _posted_diff(forge: dict[str, Path]) -> None:
    calls = [json.loads(line) for line in forge["posted"].read_text().splitlines()]
    assert calls, "the recipe posted nothing"
    diff = (forge["work"] / "memory-diff.md").read_text()
    assert diff.startswith("## Memory: project-alpha@main → project-alpha@main after merging feat")
    assert "token bucket" in diff and "holds only in" in diff


def test_the_github_actions_recipe_runs_on_a_local_clone(forge: dict[str, Path]) -> None:
    flow = yaml.safe_load((DOCS / "github-actions.yml").read_text())
    values = {"github.head_ref": "feat", "github.event.number": "7", "github.token": "t",
              "vars.AM_PACKAGE || 'am'": "am"}
    ran = 0
    for step in flow["jobs"]["memory"]["steps"]:
        if "run" not in step:
            continue
        env = {k: _expand(str(v), values) for k, v in step.get("env", {}).items()}
        _run(_expand(step["run"], values), forge, env)
        ran += 1
    assert ran == 5
    _posted_diff(forge)


def test_the_gitlab_ci_recipe_runs_on_a_local_clone(forge: dict[str, Path]) -> None:
    job = yaml.safe_load((DOCS / "gitlab-ci.yml").read_text())["memory"]
    extra = {"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feat", "CI_API_V4_URL": "http://gitlab.invalid/api/v4",
             "CI_PROJECT_ID": "1", "CI_MERGE_REQUEST_IID": "7", "MEMORY_NOTE_TOKEN": "t"}
    for command in job["script"]:
        _run(command, forge, extra)
    _posted_diff(forge)


def test_the_recipes_assert_fails_the_job_on_a_contested_fact(forge: dict[str, Path]) -> None:
    env = subprocess_env(AM_HOME=str(forge["home"]))
    am = [PYTHON, "-m", "am.cli.main", "--vault", str(forge["work"] / ".memory")]
    env["AM_ACTOR"] = "ci-test"
    fid = json.loads(subprocess.run([*am, "fact", "add", "Deploys happen on Tuesdays.", "--topic", "alpha",
                                     "--format", "json"], check=True, capture_output=True, text=True,
                                    env=env).stdout)["records"][0]["id"]
    subprocess.run([*am, "fact", "status", fid, "contested", "--reason", "ops disagrees"], check=True,
                   capture_output=True, env=env)
    job = yaml.safe_load((DOCS / "gitlab-ci.yml").read_text())["memory"]
    assert_line = next(c for c in job["script"] if " assert " in c)
    lines = [c for c in job["script"][:job["script"].index(assert_line) + 1] if not _OFFLINE.match(c)]
    envp = subprocess_env(AM_HOME=str(forge["home"]))
    envp["PATH"] = f"{forge['bin']}{os.pathsep}{envp['PATH']}"
    proc = subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=forge["work"], capture_output=True, text=True,
                          check=False, env=envp)
    assert proc.returncode == 1 and f"FAIL no-contested: {fid}" in proc.stdout
