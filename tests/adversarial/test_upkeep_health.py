"""`am doctor` and `am check` agree: doctor includes check's errors (issue 14).

Before: with a record file that `am check` fails (a broken frontmatter, a
relation to nothing), `am doctor` said "all good" and exited 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from am.cli.main import cli
from am.vault import Vault
from tests.conftest import run_git


def invoke(vault_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), *args])
    return result.exit_code, result.output


def test_doctor_reports_what_check_fails(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Alpha is healthy.", topics=["project-alpha"], id="fact-ok")
    alpha.close()
    assert invoke(vault_path, "check")[0] == 0
    invoke(vault_path, "doctor", "--fix")  # what is fixable (the git hooks, when missing)
    code, out = invoke(vault_path, "doctor")
    assert code == 0 and "all good" in out, out

    broken = "facts/2026/09/23/fact-broken.md"
    (vault_path / broken).parent.mkdir(parents=True, exist_ok=True)
    (vault_path / broken).write_text("---\ntype: fact\nid: [unclosed\n---\nx\n")
    dangling = "relations/2026/09/project-alpha--depends-on--tool-ghost.md"
    (vault_path / dangling).parent.mkdir(parents=True, exist_ok=True)
    (vault_path / dangling).write_text(
        "---\ntype: relation\nid: project-alpha--depends-on--tool-ghost\nrel: depends-on\nfrom: project-alpha\n"
        "to: tool-ghost\nstatus: active\ncreated: 2026-09-23T12:00:00+08:00\n---\nx\n")
    run_git(vault_path, "add", "-A")
    run_git(vault_path, "commit", "-q", "--no-verify", "-m", "by hand")

    check_code, check_out = invoke(vault_path, "check", "--format", "json")
    errors = {(i["path"], i["code"]) for i in json.loads(check_out)["issues"] if i["severity"] == "error"}
    assert check_code == 5 and errors
    code, out = invoke(vault_path, "doctor", "--format", "json")
    assert code == 1, out
    found = json.loads(out)["findings"]
    reported = {(f["path"], f["message"].split("[")[-1].split("]")[0]) for f in found if f["kind"] == "check"}
    assert reported == errors
    code, out = invoke(vault_path, "doctor")
    assert code == 1 and "all good" not in out and broken in out and dangling in out
    # --fix leaves a person's file alone: still reported, still not good.
    code, out = invoke(vault_path, "doctor", "--fix")
    assert code == 1 and broken in out
    assert (vault_path / broken).read_text().startswith("---\ntype: fact\nid: [unclosed")
