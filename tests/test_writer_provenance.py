"""Issue 33.3: a fact's text carries the provenance of whoever wrote it, through an edit and a merge split.

``am fact edit`` kept the original writer's provenance, so Bob's text was shown to agents as
``session:alice``; a merge that split a fact edited on two machines then gave both copies one provenance
(a key changed on one side takes that side, even for the copy whose text the other side wrote).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import GIT_IDENTITY, run_git
from gitserver import synced_with_bare

from am.records.codec import parse_record
from am.records.merge import merge_record
from am.sync import sync
from am.vault import Vault
from test_worlds_trust import am


def _clone(url: Path, path: Path, *, actor: str) -> Vault:
    run_git(path.parent, "clone", "-q", str(url), str(path))
    run_git(path, "config", "user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"])
    run_git(path, "config", "user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])
    return Vault.open(path, actor=actor)


def test_an_edit_carries_the_editors_provenance(alpha: Any) -> None:
    root = alpha.root
    fid = alpha.add_fact("Alpha caches user profiles for 5 minuts.", topics=["project-alpha"], id="fact-cache").record.id
    assert alpha.get_fact(fid).provenance == "session:tester"
    alpha.close()
    code, out, err = am("--vault", str(root), "--actor", "bob", "fact", "edit", fid,
                        "Alpha caches user profiles for 5 minutes.")
    assert code == 0, err
    text = next((root / "facts").rglob(f"{fid}.md")).read_text()
    assert parse_record(text).provenance == "session:bob"  # type: ignore[union-attr]
    message = run_git(root, "log", "-1", "--format=%B")
    assert "Am-Actor: bob" in message and "it was by session:tester" in message
    code, out, err = am("--vault", str(root), "fact", "edit", fid, "Alpha caches user profiles for 6 minutes.",
                        "--provenance", "https://example.com/adr/7")
    assert code == 0, err
    assert parse_record(next((root / "facts").rglob(f"{fid}.md")).read_text()).provenance == "https://example.com/adr/7"  # type: ignore[union-attr]


def test_after_a_sync_that_splits_a_fact_each_copy_names_its_own_writer(alpha: Any, tmp_path: Path) -> None:
    alice: Vault = alpha
    fid = alice.add_fact("Alpha offers getUser(id) only.", topics=["project-alpha"], id="fact-getuser").record.id
    bare = synced_with_bare(alice, tmp_path)
    alice.close()
    alice = Vault.open(alpha.root, actor="alice")
    bob = _clone(bare, tmp_path / "bob", actor="bob")
    try:
        alice.edit_fact(fid, "Alpha offers getUser(id) and getUsers(ids).")
        bob.edit_fact(fid, "Alpha offers getUser(id), rate limited to 10/s.")
        sync(alice)
        report = sync(bob)
        assert report.action == "merge" and len(report.contested) == 2
        sync(alice)
        for vault in (alice, bob):
            facts = {f.body: f for f in vault.list_facts() if f.status == "contested"}
            assert len(facts) == 2
            assert facts["Alpha offers getUser(id) and getUsers(ids).\n"].provenance == "session:alice"
            assert facts["Alpha offers getUser(id), rate limited to 10/s.\n"].provenance == "session:bob"
    finally:
        alice.close()
        bob.close()


BASE = ("---\ntype: fact\nid: fact-x\ntopics: [project-alpha]\nstatus: active\nconfidence: medium\n"
        "provenance: session:alice\ncreated: 2026-09-23T16:30:00+08:00\n---\nAlpha offers getUser(id).\n")


def test_a_split_keeps_each_sides_provenance_whichever_side_keeps_the_file() -> None:
    path = "facts/2026/09/23/fact-x.md"
    # Alice fixed her own text (her provenance unchanged); Bob rewrote it (his provenance, his confidence).
    ours = BASE.replace("getUser(id).", "getUser(id) only.")
    theirs = BASE.replace("session:alice", "session:bob").replace("confidence: medium", "confidence: high") \
        .replace("getUser(id).", "getUser(id) and getUsers(ids).")
    for a, b in ((ours, theirs), (theirs, ours)):
        result = merge_record(path, BASE, a, b)
        texts = [result.text, *(text for p, text in result.extra if "/facts/" in f"/{p}")]
        by_body = {r.body: r for r in (parse_record(t) for t in texts)}
        assert by_body["Alpha offers getUser(id) only.\n"].provenance == "session:alice"  # type: ignore[union-attr]
        assert by_body["Alpha offers getUser(id) and getUsers(ids).\n"].provenance == "session:bob"  # type: ignore[union-attr]
        assert by_body["Alpha offers getUser(id) and getUsers(ids).\n"].confidence == "high"  # type: ignore[union-attr]
        assert by_body["Alpha offers getUser(id) only.\n"].confidence == "medium"  # type: ignore[union-attr]
