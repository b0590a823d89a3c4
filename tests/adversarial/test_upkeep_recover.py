"""`am recover --apply` replays the lost chain in order and reports what it did not replay (issue 14).

Before: each lost commit was tested against HEAD on its own, so an undo later
in the lost range, whose change alone looked "already there", was dropped and
the supersede it had taken back came back active; hand commits in the lost
range were skipped without a word.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from am.cli.main import cli
from am.vault import Vault
from tests.conftest import run_git


def recover(vault_path: Path, *args: str) -> dict:
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "recover", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_supersede_later_undone_stays_undone(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Alpha listens on 8080.", topics=["project-alpha"], id="fact-port")
    base = run_git(vault_path, "rev-parse", "HEAD").strip()
    sup = alpha.supersede_fact("fact-port", "Alpha listens on 9090.", reason="moved", id="fact-port2")
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "undo", sup.commit])
    assert result.exit_code == 0, result.output
    run_git(vault_path, "reset", "-q", "--hard", base)

    listed = recover(vault_path)
    assert [c["op"] for c in listed["lost"]] == ["fact.supersede", "undo"]
    done = recover(vault_path, "--apply")
    assert [r["outcome"] for r in done["restored"]] == ["restored", "restored"]
    with Vault.open(vault_path) as v:
        assert v.get_fact("fact-port").status == "active"
        assert v.get_fact("fact-port").superseded_by is None
        assert [f.id for f in v.list_facts()] == ["fact-port"]
    # The git CLI agrees: the superseding fact's file is not in HEAD.
    assert "fact-port2" not in run_git(vault_path, "ls-files", "facts")
    assert run_git(vault_path, "status", "--porcelain").strip() == ""


def test_hand_commits_in_the_lost_range_are_reported(alpha: Vault, vault_path: Path) -> None:
    base = run_git(vault_path, "rev-parse", "HEAD").strip()
    alpha.add_fact("Alpha caches for 60 s.", topics=["project-alpha"], id="fact-cache")
    (vault_path / "notes.txt").write_text("a person's note\n")
    run_git(vault_path, "add", "notes.txt")
    run_git(vault_path, "commit", "-q", "-m", "my own notes")
    hand = run_git(vault_path, "rev-parse", "HEAD").strip()
    alpha.add_fact("Alpha caches for 90 s.", topics=["project-alpha"], id="fact-cache2")
    run_git(vault_path, "reset", "-q", "--hard", base)

    listed = recover(vault_path)
    assert [(c["commit"] == hand, c["manual"]) for c in listed["lost"]] == [
        (False, False), (True, True), (False, False)]
    text = CliRunner().invoke(cli, ["--vault", str(vault_path), "recover"]).output
    assert "2 lost am commits" in text and f"{hand[:10]}" in text and "by hand: not replayed" in text, text
    done = recover(vault_path, "--apply")
    outcomes = {r["lost"]: r["outcome"] for r in done["restored"]}
    assert outcomes.pop(hand) == "not-replayed"
    assert sorted(outcomes.values()) == ["restored", "restored"]
    detail = next(r["detail"] for r in done["restored"] if r["lost"] == hand)
    assert f"git cherry-pick {hand[:10]}" in detail
    assert not (vault_path / "notes.txt").exists()  # not replayed
    with Vault.open(vault_path) as v:
        assert {f.id for f in v.list_facts()} == {"fact-cache", "fact-cache2"}
