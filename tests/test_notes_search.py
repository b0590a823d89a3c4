"""Notes (Obsidian pages without am frontmatter) in the cache: searchable as notes, never records, never invalid."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from am.cli.main import cli
from am.records.notes import note_text

from conftest import run_git

BROKEN = "---\ntype: fact\nid: fact-broken\ntopics: [project-alpha\ncreated: 2026-11-02\n---\nx\n"  # unclosed list


def am(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def search(vault_path: Path, *args: str) -> list[dict[str, object]]:
    hits: list[dict[str, object]] = json.loads(am("--vault", str(vault_path), "search", *args, "--format", "json"))[
        "hits"]
    return hits


def _vault_with_notes(alpha: object, vault_path: Path) -> None:
    alpha.add_fact("Alpha retries the zebracorn queue twice.", topics=["project-alpha"],  # type: ignore[attr-defined]
                   id="fact-zebracorn")
    (vault_path / "topics" / "Untitled.md").write_text("Meeting notes: the zebracorn migration waits for Li.\n")
    (vault_path / "facts" / "reading.md").write_text(
        "---\ntype: book\nauthor: someone\n---\nA book about quokkas and zebracorn herds.\n")
    (vault_path / "facts" / "broken.md").write_text(BROKEN)
    run_git(vault_path, "add", "-A")
    run_git(vault_path, "commit", "-q", "-m", "notes by hand")


def test_notes_are_found_by_search_labelled_as_notes(alpha: object, vault_path: Path) -> None:
    _vault_with_notes(alpha, vault_path)
    hits = search(vault_path, "zebracorn")
    by_id = {h["id"]: h for h in hits}
    assert by_id["fact-zebracorn"]["type"] == "fact"
    note = by_id["note:topics/Untitled.md"]
    assert note["type"] == "note" and note["status"] == "note" and note["title"] == "Untitled"
    assert note["path"] == "topics/Untitled.md" and "**zebracorn**" in str(note["snippet"])
    assert by_id["note:facts/reading.md"]["type"] == "note"  # a person's own frontmatter: still a note
    assert not any("broken" in str(h["id"]) for h in hits)
    # Words only a note holds: the note alone.
    assert [h["id"] for h in search(vault_path, "quokkas")] == ["note:facts/reading.md"]
    # Narrowed to records (a topic, a status, a time), notes stay out.
    assert not [h for h in search(vault_path, "zebracorn", "--topic", "project-alpha") if h["type"] == "note"]
    assert not [h for h in search(vault_path, "zebracorn", "--status", "active") if h["type"] == "note"]
    text = am("--vault", str(vault_path), "search", "quokkas")
    assert "note:facts/reading.md  note" in text and "facts/reading.md" in text


def test_index_status_counts_notes_and_lists_only_broken_records_as_invalid(alpha: object,
                                                                             vault_path: Path) -> None:
    _vault_with_notes(alpha, vault_path)
    status = json.loads(am("--vault", str(vault_path), "index", "status", "--format", "json"))
    assert [i["path"] for i in status["invalid"]] == ["facts/broken.md"]
    assert status["notes"] == 2
    assert "notes (no am frontmatter" in am("--vault", str(vault_path), "index", "status")


def test_notes_follow_edits_and_never_reach_a_pack(alpha: object, vault_path: Path) -> None:
    _vault_with_notes(alpha, vault_path)
    pack = json.loads(am("--vault", str(vault_path), "slice", "--query", "zebracorn",
                         "--format", "json"))
    assert "Untitled" not in json.dumps(pack) and "quokkas" not in json.dumps(pack)
    assert "fact-zebracorn" in json.dumps(pack)
    # An edit and a removal are followed (uncommitted, as the cache follows the work tree).
    (vault_path / "topics" / "Untitled.md").write_text("Now about okapis only.\n")
    (vault_path / "facts" / "reading.md").unlink()
    assert [h["id"] for h in search(vault_path, "okapis")] == ["note:topics/Untitled.md"]
    assert search(vault_path, "quokkas") == []
    assert "note:topics/Untitled.md" not in [h["id"] for h in search(vault_path, "zebracorn")]
    # A note that becomes a record is a record, and no longer a note.
    (vault_path / "topics" / "Untitled.md").write_text(
        "---\ntype: topic\nid: concept-okapi\ntitle: Okapi\nkind: concept\ncreated: 2026-11-02\n---\nOkapis.\n")
    assert [h["id"] for h in search(vault_path, "okapis")] == ["concept-okapi"]


def test_what_is_a_note() -> None:
    assert note_text("topics/Untitled.md", b"") == ("Untitled", "")
    assert note_text("a/Li Wei.md", "\ufeffplain text".encode()) == ("Li Wei", "plain text")
    assert note_text("x.md", b"---\ntype: book\n---\nbody\n") == ("x", "body\n")
    assert note_text("x.md", b"---\ntype: fact\nid: f\n---\nbody\n") is None  # a record (broken or not)
    assert note_text("x.md", b"---\ntype: factt\nid: fact-x\n---\nbody\n") is None  # an am id: a broken record
    assert note_text("x.md", b"\xff\xfe") is None


def test_a_time_phrase_that_leaves_nothing_falls_back_to_notes_too(alpha: object, vault_path: Path) -> None:
    # Only a note says "quokkas": the fallback searched records only and said "nothing matches without it either".
    _vault_with_notes(alpha, vault_path)
    out = json.loads(am("--vault", str(vault_path), "search", "quokkas", "yesterday", "--format", "json"))
    assert [h["id"] for h in out["hits"]] == ["note:facts/reading.md"] and out["without_range"] == 1
    assert out["notes"][0].endswith("and nothing in that range matches; 1 note matches without it, shown below")
    out = json.loads(am("--vault", str(vault_path), "search", "zebracorn", "yesterday", "--format", "json"))
    assert {h["id"] for h in out["hits"]} == {"fact-zebracorn", "note:topics/Untitled.md", "note:facts/reading.md"}
    assert out["notes"][0].endswith("; 1 record and 2 notes match without it, shown below")
    # Narrowed to records besides the phrase, the fallback stays with records.
    out = json.loads(am("--vault", str(vault_path), "search", "quokkas", "yesterday", "--status", "active",
                        "--format", "json"))
    assert out["hits"] == [] and out["notes"][0].endswith("; nothing matches without it either")
