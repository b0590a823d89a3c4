"""Imports into a populated vault (issue 38.2): a target the source does not define is the vault's record of that
name. basic-memory notes linking to `[[Redis]]` import into a vault with `tool-redis` titled Redis, and the
relation reaches `tool-redis`; an mcp-memory relation to an entity it never made does the same."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from am.io import ImportOptions, import_source
from am.io.names import parse_map
from am.upkeep.check import check_vault
from am.vault import Vault

Git = Callable[..., str]


def _notes(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "alpha.md").write_text(
        "---\ntitle: Alpha Service\ntype: project\n---\n# Alpha Service\n\n"
        "Alpha keeps sessions in [[Redis]].\n\n## Observations\n- [cache] Sessions expire after 30 minutes "
        "(in [[Redis]])\n\n## Relations\n- depends_on [[Redis]]\n- part_of [[Platform]]\n", encoding="utf-8")
    return folder


def test_basic_memory_links_reach_the_vaults_redis(vault: Vault, git: Git, tmp_path: Path) -> None:
    vault.add_topic(title="Redis", kind="tool", id="tool-redis")
    summary = import_source(vault, "basic-memory", _notes(tmp_path / "notes"))
    assert summary.aside == [], summary.lines()
    assert summary.made == {"topic": 2, "fact": 1, "relation": 2}  # Alpha, and Platform (the vault has none)
    assert summary.merged == 1
    rels = {r.to: r for r in vault.list_relations()}
    assert rels["tool-redis"].from_ == "project-alpha-service" and rels["tool-redis"].rel == "depends-on"
    assert rels["tool-redis"].id == "project-alpha-service--depends-on--tool-redis"
    assert "concept-platform" in rels
    assert vault.locate("concept-redis") is None
    alpha = vault.get_topic("project-alpha-service")
    assert "[[tool-redis|Redis]]" in alpha.body
    (fact,) = vault.list_facts()
    assert "[[tool-redis|Redis]]" in fact.body
    report = check_vault(vault)
    assert report.errors == [] and report.warnings == [], [i.describe() for i in report.issues]
    before = git("rev-list", "--count", "HEAD")
    again = import_source(vault, "basic-memory", tmp_path / "notes")
    assert again.commits == [] and git("rev-list", "--count", "HEAD") == before


def test_mcp_relation_to_an_entity_it_never_made_reaches_the_vaults(vault: Vault, tmp_path: Path) -> None:
    vault.add_topic(title="Redis", kind="tool", id="tool-redis")
    source = tmp_path / "memory.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in [
        {"type": "entity", "name": "Alpha", "entityType": "project", "observations": ["Alpha serves the app"]},
        {"type": "relation", "from": "Alpha", "to": "Redis", "relationType": "uses"},
    ]), encoding="utf-8")
    summary = import_source(vault, "mcp-memory", source)
    assert summary.aside == [], summary.lines()
    (rel,) = vault.list_relations()
    assert (rel.from_, rel.to, rel.rel) == ("project-alpha", "tool-redis", "depends-on")
    assert vault.locate("concept-redis") is None


def test_a_defined_clash_is_refused_alone_and_the_rest_imported(vault: Vault, tmp_path: Path) -> None:
    vault.add_topic(title="Redis", kind="tool", id="tool-redis")
    notes = _notes(tmp_path / "notes")
    (notes / "redis.md").write_text("---\ntitle: Redis\ntype: database-ish\n---\n# Redis\n\n## Observations\n"
                                    "- [fact] Redis is single-threaded\n", encoding="utf-8")
    summary = import_source(vault, "basic-memory", notes)
    refused = [a for a in summary.aside if "refused" in a.reason]
    assert len(refused) == 1 and "concept-redis" in refused[0].reason and "tool-redis" in refused[0].reason
    assert vault.get_topic("project-alpha-service").title == "Alpha Service"
    assert vault.locate("concept-redis") is None
    # What hangs on the refused topic is left aside with it; mapped, it all lands on the vault's Redis.
    mapped = import_source(vault, "basic-memory", notes, options=_mapped("Redis", "tool-redis"))
    assert [a for a in mapped.aside if "refused" in a.reason] == []
    facts = {f.body.strip(): f for f in vault.list_facts()}
    assert facts["Redis is single-threaded"].topics == ("tool-redis",)


def _mapped(name: str, target: str) -> ImportOptions:
    return ImportOptions(topic_map=tuple(parse_map([f"{name}={target}"]).items()))
