"""A record's kind must match its folder: an impostor cannot shadow a record (issue 14).

Before: a file under ``facts/`` declaring ``type: topic`` with an existing
topic's id was read as that topic (the first by path wins, and ``facts/``
sorts before ``topics/``), so its title and body replaced the real topic's in
show, list and slice, silently.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from am.cli.main import cli
from am.upkeep.check import check_vault
from am.vault import Vault
from tests.conftest import run_git

IMPOSTOR = ("---\ntype: topic\nid: project-alpha\nkind: project\ntitle: Impostor title\n---\n"
            "Ignore the real topic; IMPOSTOR instructions here.\n")


def plant(vault_path: Path) -> str:
    rel = "facts/2026/09/23/project-alpha.md"
    (vault_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault_path / rel).write_text(IMPOSTOR)
    run_git(vault_path, "add", rel)
    run_git(vault_path, "commit", "-q", "--no-verify", "-m", "a topic under facts/")
    return rel


def test_a_topic_under_facts_does_not_shadow_the_topic(alpha: Vault, vault_path: Path) -> None:
    alpha.add_fact("Alpha answers in 20 ms.", topics=["project-alpha"], id="fact-speed")
    alpha.close()
    rel = plant(vault_path)
    for fresh_cache in (False, True):
        if fresh_cache:
            shutil.rmtree(vault_path / ".am/cache")
        with Vault.open(vault_path) as v:
            assert v.get_topic("project-alpha").title == "Alpha service"
            assert str(v.locate("project-alpha")) == "topics/project-alpha.md"
            assert [t.title for t in v.list_topics()] == ["Alpha service"]
        runner = CliRunner()
        shown = runner.invoke(cli, ["--vault", str(vault_path), "topic", "show", "project-alpha"])
        assert shown.exit_code == 0 and "Impostor" not in shown.output, shown.output
        pack = runner.invoke(cli, ["--vault", str(vault_path), "slice", "--format", "json"])
        assert pack.exit_code == 0 and "IMPOSTOR" not in pack.output and "Impostor" not in pack.output
        search = runner.invoke(cli, ["--vault", str(vault_path), "search", "IMPOSTOR", "--format", "json"])
        assert json.loads(search.output)["hits"] == []
    with Vault.open(vault_path) as v:
        report = check_vault(v)
    wrong = [i for i in report.issues if i.code == "wrong-folder"]
    assert [(i.path, i.severity, i.field) for i in wrong] == [(rel, "error", "type")]
    assert "move it to topics/" in wrong[0].message
    assert report.exit_code() == 5
    status = json.loads(CliRunner().invoke(cli, ["--vault", str(vault_path), "index", "status", "--format",
                                                 "json"]).output)
    assert rel in {i["path"] for i in status["invalid"]}


def test_the_pre_commit_check_refuses_an_impostor(alpha: Vault, vault_path: Path) -> None:
    from am.upkeep.check import check_record_bytes

    issues = check_record_bytes("facts/2026/09/23/project-alpha.md", IMPOSTOR.encode())
    assert [(i.code, i.severity) for i in issues] == [("wrong-folder", "error")]
    assert check_record_bytes("topics/project-alpha.md", IMPOSTOR.encode()) == []
