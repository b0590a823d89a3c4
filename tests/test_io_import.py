"""`am import`: every system's documented format, into a vault that `am check` finds clean, nothing dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from io_samples import SAMPLES, write_sample

from am.io import ImportOptions, import_source, read_source
from am.records.model import Fact, Relation, Topic
from am.upkeep.check import check_vault
from am.vault import Vault

Git = Callable[..., str]


def _vault_text(vault: Vault) -> str:
    return "\n".join((vault.root / p).read_text(encoding="utf-8") for p in vault.iter_record_paths())


def _findable(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return json.dumps(value)
    return str(value)


@pytest.mark.parametrize("system", sorted(SAMPLES))
def test_import_sample(system: str, vault: Vault, git: Git, tmp_path: Path) -> None:
    sample = write_sample(system, tmp_path / "src")
    before = int(git("rev-list", "--count", "HEAD"))
    summary = import_source(vault, system, sample.path)
    assert summary.made == sample.made, summary.lines()
    assert len(summary.aside) == sample.aside, summary.lines()
    assert all(a.reason for a in summary.aside)
    # One commit for the batch, by the bulk path, with a structured message.
    assert int(git("rev-list", "--count", "HEAD")) == before + 1
    assert git("log", "-1", "--format=%(trailers:key=Am-Op,valueonly)").strip() == "import.batch"
    assert git("status", "--porcelain") == ""
    report = check_vault(vault)
    assert report.errors == [] and report.warnings == [], [i.describe() for i in report.issues]
    records = [r for _, r in vault.iter_records()]
    facts = [r for r in records if isinstance(r, Fact)]
    assert {f.provenance for f in facts} == {f"import:{system}"}
    assert sum(f.pinned for f in facts) == sample.pinned
    assert sum(f.status == "superseded" for f in facts) == sample.superseded
    text = _vault_text(vault)
    for needle in sample.texts:
        assert needle in text, needle
    for value in sample.values:
        shown = _findable(value)
        if shown is not None:
            assert shown in text, value


@pytest.mark.parametrize("system", sorted(SAMPLES))
def test_reimport_adds_no_commit(system: str, vault: Vault, git: Git, tmp_path: Path) -> None:
    sample = write_sample(system, tmp_path / "src")
    import_source(vault, system, sample.path)
    head = git("rev-parse", "HEAD")
    again = import_source(vault, system, sample.path)
    assert git("rev-parse", "HEAD") == head
    assert again.commits == [] and again.made == {"topic": 0, "fact": 0, "relation": 0}
    assert again.already == sample.made["fact"] + sample.made["relation"]


def test_mcp_memory_mapping(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("mcp-memory", tmp_path / "src")
    import_source(vault, "mcp-memory", sample.path)
    alpha = vault.get_topic("project-alpha")
    assert alpha.title == "Alpha 服务" and alpha.kind == "project"
    assert alpha.extra["entity_type"] == "project" and alpha.extra["createdAt"] == "2025-01-02"
    redis = vault.get_topic("tool-redis")
    assert redis.extra == {"entity_type": "software", "source_pinned": True}  # a topic has no pin: kept aside
    rels = {r.id: r for r in vault.list_relations()}
    assert rels["project-alpha--depends-on--tool-redis"].extra == {"source_rel": "depends_on"}
    odd = rels["project-alpha--references--tool-redis--caches-sessions-in"]
    assert odd.rel == "references" and odd.extra == {"source_rel": "caches_sessions_in"}
    assert rels["tool-redis-7--supersedes--tool-redis-6"].rel == "supersedes"
    observations = [f for f in vault.list_facts(topic="project-alpha")]
    assert sorted(f.extra["source_index"] for f in observations) == [0, 1]


def test_openchronicle_supersede_chain(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("openchronicle", tmp_path / "src")
    import_source(vault, "openchronicle", sample.path)
    facts = {f.extra["source_id"]: f for f in vault.list_facts()}
    old = facts["user-preferences#20260420-0915-a1b2c3"]
    new = facts["user-preferences#20260422-1010-d4e5f6"]
    assert old.status == "superseded" and old.superseded_by == new.id and new.supersedes == (old.id,)
    assert new.reason == "switched editors" and old.body == "User prefers VSCode for Python work.\n"
    assert old.created == "2026-04-20T09:15" and "superseded-by:20260422-1010-d4e5f6" not in old.tags
    topic = vault.get_topic("person-user-preferences")
    assert topic.body == "User's preferences and working style\n"
    assert topic.extra["entry_count"] == 3 and topic.extra["mood"] == "calm"


def test_a_later_supersede_updates_the_imported_fact(vault: Vault, git: Git, tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    first = ("---\ndescription: Tools\n---\n## [2026-04-20T09:15] {id: 20260420-0915-a1b2c3} #editor\n"
             "User prefers VSCode.\n")
    (memory / "tool-editor.md").write_text(first, encoding="utf-8")
    import_source(vault, "openchronicle", memory)
    (memory / "tool-editor.md").write_text(
        first.replace("#editor\nUser prefers VSCode.", "#editor #superseded-by:20260501-1000-ffffff\n~~User prefers VSCode.~~")
        + "\n## [2026-05-01T10:00] {id: 20260501-1000-ffffff} #editor\nUser prefers Zed.\n"
        "<!-- supersedes: 20260420-0915-a1b2c3; reason: tried Zed -->\n", encoding="utf-8")
    summary = import_source(vault, "openchronicle", memory)
    assert summary.made["fact"] == 1 and summary.updated == 1 and len(summary.commits) == 1
    facts = {f.body: f for f in vault.list_facts()}
    assert facts["User prefers VSCode.\n"].superseded_by == facts["User prefers Zed.\n"].id
    report = check_vault(vault)
    assert report.errors == [] and report.warnings == []


def test_supermemory_versions_pins_weights(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("supermemory", tmp_path / "src")
    summary = import_source(vault, "supermemory", sample.path)
    assert any("embedding" in a.origin for a in summary.aside)
    facts = {f.extra["source_id"]: f for f in vault.list_facts()}
    assert facts["mem_1"].superseded_by == facts["mem_2"].id and facts["mem_1"].status == "superseded"
    assert facts["mem_3"].pinned and facts["mem_3"].confidence == "low"
    assert facts["mem_2"].confidence == "high" and facts["mem_2"].extra["sourceRelevanceScore"] == 0.95
    assert facts["mem_2"].extra["source_version"] == 2 and facts["mem_2"].extra["moodScore"] == 7
    assert facts["mem_4"].status == "expired" and facts["mem_4"].reason == "team changed"
    assert "embedding" not in json.dumps([f.extra for f in facts.values()])
    rel = next(iter(vault.list_relations()))
    assert (rel.from_, rel.to, rel.rel, rel.extra["source_rel"]) == (facts["mem_4"].id, facts["mem_2"].id,
                                                                      "references", "extends")


def test_supermemory_relations_not_a_mapping_are_kept(vault: Vault, tmp_path: Path) -> None:
    """memoryRelations as a list (not {id: kind}) is kept as a field, not a traceback."""
    source = tmp_path / "sm.json"
    source.write_text(json.dumps({"memories": [{"id": "m1", "memory": "Alex likes tea", "memoryRelations": ["m2"]},
                                               {"id": "m2", "memory": "Alex likes coffee", "memoryRelations": None}]}))
    summary = import_source(vault, "supermemory", source)
    assert summary.made["fact"] == 2
    assert {f.extra["source_id"]: f.extra["memoryRelations"] for f in vault.list_facts()} == {"m1": ["m2"], "m2": None}


def test_basic_memory_observations_and_relations(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("basic-memory", tmp_path / "src")
    import_source(vault, "basic-memory", sample.path)
    coffee = vault.get_topic("concept-coffee-brewing-methods")
    assert coffee.tags == ("coffee", "brewing")
    assert coffee.extra["source"] == "wikipedia" and coffee.extra["source_superseded_by"] == "coffee-brewing-2026"
    assert coffee.extra["source_pinned"] is True
    assert "[[concept-coffee-bean-origins|Coffee Bean Origins]]" in coffee.body
    assert "- [method]" not in coffee.body and "- [ ] a task, not an observation" in coffee.body
    person = vault.get_topic("person-paul-graham")
    assert person.kind == "person"
    facts = {f.body.strip(): f for f in vault.list_facts()}
    temp = facts["Water temperature at 205°F extracts optimal compounds #brewing"]
    assert temp.tags == ("brewing",) and temp.extra["category"] == "technique"
    # The observation's context stays in the fact's text (a pack states the qualifier), and is kept as a key.
    assert facts["埃塞俄比亚豆子适合浅烘 (personal experience)"].extra == {"category": "偏好", "context": "personal experience"}
    rels = {r.extra.get("source_rel", r.rel): r for r in vault.list_relations()}
    assert rels["requires"].rel == "depends-on" and rels["requires"].extra["context"] == "burr grinder"
    assert rels["works_at"].rel == "belongs-to" and rels["part_of"].rel == "part-of"


def test_markdown_proposals_and_adr_chain(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("markdown", tmp_path / "src")
    import_source(vault, "markdown", sample.path)
    facts = vault.list_facts()
    assert {f.status for f in facts} == {"pending-review"}
    by_body = {f.body.strip(): f for f in facts}
    old, new = by_body["We will use Postgres."], by_body["We will use SQLite, 单文件数据库."]
    assert old.superseded_by == new.id and new.supersedes == (old.id,)
    assert new.created == "2026-02-10"
    decision = vault.get_topic("decision-use-sqlite")
    assert decision.extra["adr_number"] == 2 and "Supersedes" in decision.extra["adr_status"]
    assert by_body["测试数据放在 tests/data 下"].extra == {"section": "Testing"}


def test_lossless_records_wait_for_review(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("lossless", tmp_path / "src")
    import_source(vault, "lossless", sample.path)
    facts = {f.extra["source_id"]: f for f in vault.list_facts()}
    assert {f.status for f in facts.values()} == {"pending-review"}
    assert facts["r3"].supersedes == (facts["r1"].id,) and facts["r1"].superseded_by == facts["r3"].id
    assert facts["r2"].pinned and facts["r2"].extra == {"source_id": "r2", "role": "assistant", "model": "claude-x"}
    assert vault.get_topic("session-s-42").kind == "session"


def test_openclaw_layers_and_weights(vault: Vault, tmp_path: Path) -> None:
    sample = write_sample("openclaw", tmp_path / "src")
    import_source(vault, "openclaw", sample.path)
    facts = {f.extra["source_id"]: f for f in vault.list_facts()}
    assert facts["k1"].pinned and facts["k1"].confidence == "high" and facts["k1"].extra["layer"] == "hot"
    assert not facts["k2"].pinned and facts["k2"].superseded_by == facts["k3"].id
    assert facts["k3"].body == "用 pnpm 管理依赖\n\npnpm replaced npm in March.\n"
    assert facts["k3"].extra["summary"] == "用 pnpm 管理依赖" and facts["k3"].extra["importance"] == 0.6


def test_openclaw_tags_that_are_not_a_list_are_kept_whole(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "items.json"
    source.write_text(json.dumps([{"id": "i1", "summary": "Deploys go through CI", "tags": "ci,deploy"},
                                  {"id": "i2", "summary": "Builds are cached", "tags": ["ci", 7, {"x": 1}]}]))
    import_source(vault, "openclaw", source)
    facts = sorted(vault.list_facts(), key=lambda f: f.body)
    assert [f.tags for f in facts] == [("ci",), ()]
    assert facts[1].extra["source_tags"] == "ci,deploy"
    assert facts[0].extra["source_tags"] == ["ci", 7, {"x": 1}]  # a list with other items than text: kept whole


def test_secrets_refused_redacted_or_allowed(vault: Vault, git: Git, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    source = tmp_path / "memory.jsonl"
    source.write_text(json.dumps({"type": "entity", "name": "CI", "entityType": "tool",
                                  "observations": ["CI is green", f"the CI token is {token}"]}) + "\n")
    refused = import_source(vault, "mcp-memory", source, options=ImportOptions(dry_run=True))
    assert refused.made["fact"] == 1 and "GitHub" in refused.aside[0].reason and token not in refused.aside[0].reason
    redacted = import_source(vault, "mcp-memory", source, options=ImportOptions(secrets="redact"))
    assert redacted.made["fact"] == 2 and redacted.redacted == 1
    text = _vault_text(vault)
    assert token not in text and "the CI token is [redacted]" in text
    assert token not in git("log", "-p", "--all")


def test_dry_run_writes_nothing(vault: Vault, git: Git, tmp_path: Path) -> None:
    sample = write_sample("mcp-memory", tmp_path / "src")
    head = git("rev-parse", "HEAD")
    summary = import_source(vault, "mcp-memory", sample.path, options=ImportOptions(dry_run=True))
    assert summary.made == sample.made and summary.commits == []
    assert git("rev-parse", "HEAD") == head and git("status", "--porcelain") == ""


def test_batches_are_commits(vault: Vault, git: Git, tmp_path: Path) -> None:
    sample = write_sample("mcp-memory", tmp_path / "src")
    before = int(git("rev-list", "--count", "HEAD"))
    summary = import_source(vault, "mcp-memory", sample.path, options=ImportOptions(batch_size=5))
    assert len(summary.commits) == 3 and int(git("rev-list", "--count", "HEAD")) == before + 3
    # Topics go first, so no batch names a topic that is not committed yet.
    first = git("show", "--name-only", "--format=", summary.commits[0]).split()
    assert sum(p.startswith("topics/") for p in first) == 4 and len(first) == 5
    assert git("status", "--porcelain") == ""


def test_read_source_is_pure(tmp_path: Path) -> None:
    sample = write_sample("mcp-memory", tmp_path / "src")
    one, two = read_source("mcp-memory", sample.path), read_source("mcp-memory", sample.path)
    assert [i.record for i in one.items] == [i.record for i in two.items]
    kinds = {type(i.record) for i in one.items}
    assert kinds == {Topic, Fact, Relation}


# A source value am cannot read as what its key means is kept whole as source_<key>, not replaced by a default.

def test_lossless_values_that_do_not_parse_are_kept(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_text(json.dumps({"id": "r1", "text": "CI is green", "ts": "last tuesday", "pinned": "yes",
                                  "tags": "ci,deploy", "supersedes": {"id": "r0"}}) + "\n")
    import_source(vault, "lossless", source)
    (fact,) = vault.list_facts()
    assert not fact.pinned and fact.tags == () and fact.supersedes == ()
    assert {k: fact.extra[k] for k in ("source_ts", "source_pinned", "source_tags", "source_supersedes")} == {
        "source_ts": "last tuesday", "source_pinned": "yes", "source_tags": "ci,deploy",
        "source_supersedes": {"id": "r0"}}


def test_openclaw_values_that_do_not_parse_are_kept(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "items.json"
    source.write_text(json.dumps([{"id": "i1", "summary": "Deploys go through CI", "created_at": "soon",
                                   "topic": {"name": "CI"}}]))
    import_source(vault, "openclaw", source)
    (fact,) = vault.list_facts()
    assert fact.extra["source_created_at"] == "soon" and fact.extra["source_topic"] == {"name": "CI"}


def test_supermemory_values_that_do_not_parse_are_kept(vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "sm.json"
    source.write_text(json.dumps({"documents": [{"id": "d1", "title": "Notes", "createdAt": "yesterday",
                                                 "memories": [{"id": "m1", "memory": "Alex likes tea",
                                                               "createdAt": "yesterday", "forgetAfter": "never",
                                                               "isStatic": "true"}]}]}))
    import_source(vault, "supermemory", source)
    (fact,) = vault.list_facts()
    assert not fact.pinned and fact.valid_until is None
    assert (fact.extra["source_createdAt"], fact.extra["source_forgetAfter"], fact.extra["source_isStatic"]) == (
        "yesterday", "never", "true")
    assert vault.get_topic("concept-d1").extra["source_createdAt"] == "yesterday"


def test_basic_memory_values_that_do_not_parse_are_kept(vault: Vault, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "coffee.md").write_text("---\ntitle: Coffee\ncreated: the other day\n"
                                                  "tags: {drink: hot}\n---\n- [fact] beans are seeds\n")
    import_source(vault, "basic-memory", tmp_path / "notes")
    topic = vault.get_topic("concept-coffee")
    assert topic.tags == ()
    assert topic.extra["source_created"] == "the other day" and topic.extra["source_tags"] == {"drink": "hot"}


def test_openchronicle_created_that_does_not_parse_is_kept(vault: Vault, tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "tool-editor.md").write_text("---\ndescription: Tools\ncreated: a while ago\n---\n"
                                                        "## [2026-04-20T09:15] {id: a1} #editor\nUser likes Zed.\n")
    import_source(vault, "openchronicle", tmp_path / "memory")
    assert vault.get_topic("tool-editor").extra["source_created"] == "a while ago"


def test_mcp_memory_entity_lines_of_one_name_are_merged(vault: Vault, tmp_path: Path) -> None:
    """A second line of an entity's name keeps its entityType and keys on the topic, and the summary counts it."""
    source = tmp_path / "memory.jsonl"
    lines = [{"type": "entity", "name": "Redis", "entityType": "software", "observations": ["Redis keeps sessions"],
              "owner": "ops"},
             {"type": "entity", "name": "Redis", "entityType": "database", "observations": ["Redis is version 7"],
              "owner": "platform", "region": "eu"}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = import_source(vault, "mcp-memory", source)
    assert summary.made == {"topic": 1, "fact": 2, "relation": 0}
    assert summary.read["entity lines merged into an earlier one of the name"] == 1
    assert vault.get_topic("tool-redis").extra == {"entity_type": "software", "owner": "ops",
                                                   "entity_type_2": "database", "owner_2": "platform",
                                                   "region": "eu"}


def test_redaction_masks_every_field_the_write_path_scans(vault: Vault, git: Git, tmp_path: Path) -> None:
    """The write path scans tags, provenance, paths, repo and branch too (writes.scan_record): --redact-secrets
    must mask them there as well, or the record is refused as 'could not be redacted' instead of written masked."""
    from dataclasses import replace

    from am.io.importer import _screen
    from am.records.writes import scan_record

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    source = tmp_path / "openclaw.json"
    source.write_text(json.dumps([{"id": "i1", "summary": "Deploys go through CI", "tags": ["ci", token]}]))
    summary = import_source(vault, "openclaw", source, options=ImportOptions(secrets="redact"))
    assert summary.made["fact"] == 1 and summary.redacted == 1 and summary.aside == [], summary.lines()
    assert [f.tags for f in vault.list_facts()] == [("ci", "[redacted]")]
    assert token not in git("log", "-p", "--all")
    fact = next(iter(vault.list_facts()))
    hostile = replace(fact, provenance=f"https://ci:{token}@github.com/o/r", paths=(f"src/{token}.py",),
                      repo=token, version=f"feature/{token}")
    cleaned, why, redacted = _screen(hostile, "redact")
    assert why is None and redacted and cleaned is not None and scan_record(cleaned) == []
    assert token not in repr(cleaned) and cleaned.provenance == "https://ci:[redacted]@github.com/o/r"
