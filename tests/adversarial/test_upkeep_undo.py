"""`am undo` of a write already undone says so (issue 14).

Before: the second undo of an add was a three-way merge whose rename detection
paired the removed file with an unrelated later fact of similar text, and the
command failed with exit 9 naming that later file as a conflict.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from am.cli.main import cli
from am.errors import AmError
from am.vault import Vault
from tests.conftest import run_git


def am(*args: str) -> tuple[int, str]:
    """Run the command line in-process; return the exit code am's main would give and all it said."""
    result = CliRunner().invoke(cli, list(args))
    err = result.exception
    if isinstance(err, AmError):
        return err.exit_code, result.output + str(err)
    return result.exit_code, result.output


def test_undo_twice_says_already_undone(alpha: Vault, vault_path: Path) -> None:
    first = alpha.add_fact("Alpha retries three times.", topics=["project-alpha"], id="fact-first")
    alpha.add_fact("Alpha retries four times.", topics=["project-alpha"], id="fact-second")
    code, out = am("--vault", str(vault_path), "undo", first.commit)
    assert code == 0, out
    undo_commit = run_git(vault_path, "rev-parse", "HEAD").strip()
    code, message = am("--vault", str(vault_path), "undo", first.commit)
    assert code == 0, message  # done already: a note, neither a usage error nor a conflict (9) (PAPERCUTS)
    assert "already undone" in message and undo_commit[:10] in message, message
    assert "fact-second" not in message, message
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == undo_commit  # nothing changed
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    with Vault.open(vault_path) as v:
        assert [f.id for f in v.list_facts()] == ["fact-second"]


def test_undo_of_a_supersede_already_undone(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Alpha listens on 8080.", topics=["project-alpha"], id="fact-port")
    sup = alpha.supersede_fact("fact-port", "Alpha listens on 9090.", reason="moved", id="fact-port2")
    assert am("--vault", str(vault_path), "undo", sup.commit)[0] == 0
    code, message = am("--vault", str(vault_path), "undo", sup.commit)
    assert code == 0 and "already undone" in message, message
