"""The vector level (issue 22), whether or not the am[semantic] extra is installed.

A tiny deterministic embedder (``CONCEPTS`` below: words mapped to shared
concept dimensions, so "logins" and "sessions" meet) is installed as a package
in a temporary folder with an ``am.embeddings`` entry point, and chosen the way a
user would: ``$AM_EMBEDDINGS`` or ``embeddings:`` in ``$AM_HOME/config.yml``.
The real model (WordLlama) is tested in tests/test_semantic_wordllama.py, which
CI runs after installing the extra.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from am.cache import vectors
from am.cache.search import search
from tests.conftest import PYTHON, subprocess_env

CONCEPTS = textwrap.dedent('''
    """A deterministic embedder for tests: words that mean the same share a dimension."""
    import os
    import re

    import numpy as np

    GROUPS = [
        {"login", "logins", "session", "sessions", "signed"},
        {"remembered", "ttl", "minute", "minutes", "long", "expire", "expires", "last"},
        {"throttling", "throttle", "rate", "limit", "limits", "bucket"},
        {"deploy", "deploys", "release", "ship", "shipping"},
        {"friday", "fridays", "weekend"},
        {"database", "postgres", "db"},
    ]


    class Concepts:
        def __init__(self, name="concepts 1", fail=False):
            self.name = name
            self.fail = fail

        def embed(self, texts):
            if self.fail:
                raise RuntimeError("the model file is damaged")
            log = os.environ.get("CONCEPTS_LOG")
            if log:
                with open(log, "a") as handle:
                    handle.write(f"{len(texts)}\\n")
            out = np.zeros((len(texts), len(GROUPS) + 1), dtype=np.float32)
            for row, text in enumerate(texts):
                for word in re.findall(r"[a-z0-9]+", text.lower()):
                    hit = [n for n, group in enumerate(GROUPS) if word in group]
                    for n in hit:
                        out[row, n] += 1.0
                    if not hit:
                        out[row, -1] += 0.05
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            return out / norms


    def factory():
        return Concepts()


    def broken():
        raise OSError("no model here")
''')

SESSION = "Alpha keeps user sessions in Redis with a 30-minute TTL."
FACTS = [
    ("fact-session", SESSION),
    ("fact-deploy", "Deploys are frozen on Fridays after 15:00."),
    ("fact-db", "The Postgres pool is capped at 40 connections."),
    ("fact-answers", "Alpha answers in 20 ms."),
]
QUESTION = "how long are logins remembered"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Install the concepts embedder as a package (module and entry point) in a folder on the path."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "concept_backend.py").write_text(CONCEPTS)
    info = folder / "concept_backend-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: concept-backend\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[am.embeddings]\nconcepts = concept_backend:factory\nbroken = concept_backend:broken\n")
    monkeypatch.syspath_prepend(str(folder))
    return folder


@pytest.fixture
def filled(alpha: Any) -> Any:
    for fid, text in FACTS:
        alpha.add_fact(text, topics=["project-alpha"], id=fid)
    return alpha


def am_json(vault: Any, site: Path, *args: str, **env: str) -> dict[str, Any]:
    """Run `am --vault V ARGS --format json` as a process and return its JSON."""
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault.root), *args, "--format", "json"],
                          capture_output=True, text=True, check=False,
                          env=subprocess_env(PYTHONPATH=f"{site}:{subprocess_env()['PYTHONPATH']}", **env))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def concepts(site: Path, **kw: Any) -> Any:
    import concept_backend  # type: ignore[import-not-found]  # the package the fixture installed

    return concept_backend.Concepts(**kw)


def test_search_finds_by_meaning_through_an_entry_point(filled: Any, site: Path) -> None:
    words = am_json(filled, site, "search", QUESTION)
    assert "fact-session" not in [h["id"] for h in words["hits"]]  # no word in common: full text cannot
    assert words["retrieval"]["levels"] == ["vector: off ($AM_EMBEDDINGS)"]
    meaning = am_json(filled, site, "search", QUESTION, AM_EMBEDDINGS="concepts")
    hits = {h["id"]: h for h in meaning["hits"]}
    assert hits["fact-session"]["found"] == "vector"
    assert hits["fact-session"]["matched"]["how"] == "meaning"
    assert meaning["retrieval"]["served"] in ("vector", "vector+full-text")
    assert meaning["retrieval"]["levels"][0] == "vector: concepts 1"
    # A question full text answers keeps its answer first, now found both ways.
    both = am_json(filled, site, "search", "sessions TTL", AM_EMBEDDINGS="concepts")
    assert both["hits"][0]["id"] == "fact-session" and both["hits"][0]["found"] == "full-text+vector"


def test_slice_query_says_which_levels_served_and_how_each_fact_was_found(filled: Any, site: Path,
                                                                          am_home: Path) -> None:
    (am_home / "config.yml").write_text("embeddings: concepts\n")
    pack = am_json(filled, site, "slice", "--query", QUESTION, AM_EMBEDDINGS="")
    retrieval = pack["scope"]["retrieval"]
    assert retrieval["level"] in ("vector", "vector+full-text")
    assert retrieval["notes"][0] == "vector: concepts 1"
    assert retrieval["found"]["fact-session"] == "vector"
    shown = [f["id"] for t in pack["topics"] for f in t["facts"]]
    assert shown[0] == "fact-session"
    text = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(filled.root), "slice", "--query", QUESTION],
                          capture_output=True, text=True, check=True,
                          env=subprocess_env(PYTHONPATH=f"{site}:{subprocess_env()['PYTHONPATH']}",
                                             AM_EMBEDDINGS="")).stdout
    assert "(served by: vector" in text and "found by both:" in text


def _vector_rows(vault: Any) -> tuple[int, str | None, int]:
    """Return (vector rows, the model named in meta, distinct blobs of facts and topics), read with sqlite3."""
    db = sqlite3.connect(vault.root / ".am/cache/index.sqlite")
    try:
        rows = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        model = db.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
        blobs = db.execute("SELECT count(DISTINCT f.blob) FROM records r JOIN files f ON f.path = r.path "
                           "WHERE r.type IN ('fact', 'topic')").fetchone()[0]
    finally:
        db.close()
    return rows, model[0] if model else None, blobs


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "embedded.log"
    monkeypatch.setenv("CONCEPTS_LOG", str(path))
    yield path


def _embedded(log: Path) -> list[int]:
    counts = [int(n) for n in log.read_text().split()] if log.exists() else []
    log.unlink(missing_ok=True)
    return counts


def test_vectors_are_cache_keyed_by_blob(filled: Any, site: Path, log: Path) -> None:
    model = concepts(site)
    index = filled.cache()
    first = search(index, QUESTION, embedder=model)
    assert _embedded(log) == [5, 1]  # four facts and the topic, then the question
    assert _vector_rows(filled) == (5, "concepts 1", 5)
    again = search(index, QUESTION, embedder=model)
    assert _embedded(log) == [1] and again.hits == first.hits  # nothing re-embedded
    filled.add_fact("Logins expire after a week of silence.", topics=["project-alpha"], id="fact-expire")
    index = filled.cache()
    found = search(index, QUESTION, embedder=model)
    assert _embedded(log) == [1, 1]  # only the new fact, then the question
    assert {h.id for h in found.hits} >= {"fact-session", "fact-expire"}
    # An edit made outside am (Obsidian): a new blob, embedded once; the old vector goes.
    path = filled.root / next(p for p, r in index.records(ids=["fact-answers"]))
    path.write_text(path.read_text().replace("20 ms", "15 ms"))
    index.refresh()  # as the next command would (a process refreshes at most once a second)
    search(index, QUESTION, embedder=model)
    assert _embedded(log) == [1, 1]
    # The old text's vector stays until stale ones pass a tenth of the table (then they are pruned).
    assert _vector_rows(filled) == (7, "concepts 1", 6)
    # Another model: every vector is made again.
    search(filled.cache(), QUESTION, embedder=concepts(site, name="concepts 2"))
    assert _embedded(log) == [6, 1]
    assert _vector_rows(filled) == (6, "concepts 2", 6)


def test_rebuild_starts_empty_and_index_rebuild_embeds(filled: Any, site: Path) -> None:
    search(filled.cache(), QUESTION, embedder=concepts(site))
    filled.cache().rebuild()
    db = sqlite3.connect(filled.root / ".am/cache/index.sqlite")
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'vectors'").fetchone()[0] == 0
    db.close()
    out = am_json(filled, site, "index", "rebuild", AM_EMBEDDINGS="concepts")
    assert out["vectors"] == 5 and out["vector"] == "vector: concepts 1"
    assert _vector_rows(filled) == (5, "concepts 1", 5)
    assert am_json(filled, site, "index", "rebuild")["vectors"] is None  # off: none made


def test_a_model_that_fails_degrades_to_full_text(filled: Any, site: Path) -> None:
    result = search(filled.cache(), "sessions TTL", embedder=concepts(site, fail=True))
    assert [h.id for h in result.hits] == ["fact-session"]
    assert result.levels == ("vector: failed (RuntimeError: the model file is damaged)",)
    assert result.served == "full-text"
    out = am_json(filled, site, "search", "sessions TTL", AM_EMBEDDINGS="broken")
    assert [h["id"] for h in out["hits"]] == ["fact-session"]
    assert out["retrieval"]["levels"][0].startswith(
        "vector: backend broken ($AM_EMBEDDINGS) failed to load (OSError: no model here)")
    pack = am_json(filled, site, "slice", "--query", "sessions TTL", AM_EMBEDDINGS="broken")
    assert pack["scope"]["retrieval"]["level"] == "full-text"
    assert pack["scope"]["retrieval"]["notes"][0].startswith("vector: backend broken")


def test_a_model_that_fails_is_said_in_the_text_output_too(filled: Any, site: Path) -> None:
    """Someone who installed the extra and reads text learns why nothing was found by meaning."""
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(filled.root), "search", "sessions TTL"],
                          capture_output=True, text=True, check=False,
                          env=subprocess_env(PYTHONPATH=f"{site}:{subprocess_env()['PYTHONPATH']}",
                                             AM_EMBEDDINGS="broken"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("note: vector: backend broken ($AM_EMBEDDINGS) failed to load (OSError: no model here)")
    assert "fact-session" in proc.stdout
    plain = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(filled.root), "search", "sessions TTL"],
                           capture_output=True, text=True, check=True, env=subprocess_env(AM_EMBEDDINGS="off"))
    assert "note:" not in plain.stdout  # a level turned off (or not installed) is no news


def test_a_model_that_fails_inside_a_slice_degrades(filled: Any, site: Path) -> None:
    from am.packs.retrieval import HybridSearch, retrieve

    index = filled.cache()
    hybrid = HybridSearch(index, concepts(site, fail=True))
    facts = {r.id: r for _, r in index.records(type="fact")}
    topics = {r.id: r for _, r in index.records(type="topic")}
    found = retrieve("sessions TTL", topics=topics, facts=facts, relations={}, search=hybrid,
                     backend_note="vector: concepts 1")
    assert found.level == "full-text" and found.ids[0] == "fact-session"
    assert "vector: failed (RuntimeError: the model file is damaged)" in found.notes


def test_settings_turn_the_level_off(filled: Any, site: Path, am_home: Path) -> None:
    from am.packs.embedding import load_backend

    (am_home / "config.yml").write_text("embeddings: off\n")
    out = am_json(filled, site, "search", QUESTION, AM_EMBEDDINGS="")
    assert out["retrieval"]["levels"] == ["vector: off ($AM_HOME/config.yml)"]
    assert "fact-session" not in [h["id"] for h in out["hits"]]
    assert load_backend({"embeddings": "off"}) == (None, "vector: off (.am/vault.yml)")
    assert load_backend({"embeddings": False}) == (None, "vector: off (.am/vault.yml)")
    settings = filled.root / ".am/vault.yml"
    settings.write_text(settings.read_text() + "embeddings: off\n")
    out = am_json(filled, site, "search", QUESTION, AM_EMBEDDINGS="concepts")
    assert out["retrieval"]["levels"] == ["vector: off (.am/vault.yml)"]


HIDE_WORDLLAMA = textwrap.dedent('''
    import sys

    class Hide:
        """Answers as if the am[semantic] extra were not installed."""
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("wordllama",):
                raise ModuleNotFoundError(name)
            return None

    sys.meta_path.insert(0, Hide())
    from am.cli.main import main
    sys.argv[0] = "am"
    main()
''')


def test_without_the_extra_search_says_not_installed_and_answers_as_before(filled: Any, site: Path) -> None:
    def run(**env: str) -> dict[str, Any]:
        proc = subprocess.run([PYTHON, "-c", HIDE_WORDLLAMA, "--vault", str(filled.root), "search", "Alpha",
                               "--format", "json"], capture_output=True, text=True, check=False,
                              env=subprocess_env(**env))
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    plain, off = run(AM_EMBEDDINGS=""), run()
    assert plain["retrieval"]["levels"] == ["vector: not installed (pip install 'am[semantic]')"]
    assert plain["hits"] == off["hits"] and plain["retrieval"]["served"] == "full-text"


def test_the_semantic_questions_share_no_word_with_their_answers(tmp_path: Path) -> None:
    """Full text finds none of their answers, even matching any one term: only meaning can."""
    from am.demo import materialise_demo
    from am.vault import Vault
    from tests.recall_set import records
    from tests.semantic_set import SEMANTIC_QUESTIONS

    vault = materialise_demo(tmp_path / "demo", register=False)
    vault.import_records(records(), source="recall set")
    vault.close()
    with Vault.open(tmp_path / "demo") as vault:
        index = vault.cache()
        assert index is not None
        overlap = {q: sorted(set(a) & {h.id for h in index.search(q, limit=5000)}) for q, a in SEMANTIC_QUESTIONS}
    assert {q: ids for q, ids in overlap.items() if ids} == {}
    assert len(SEMANTIC_QUESTIONS) >= 20
    assert sum(1 for q, _ in SEMANTIC_QUESTIONS if not q.isascii()) >= 6


def test_fuse_by_reciprocal_rank() -> None:
    fused = vectors.fuse(["a", "b", "c"], ["c", "d", "a"])
    assert [rid for rid, _ in fused] == ["a", "c", "b", "d"]
    assert dict(fused) == {"a": "full-text+vector", "b": "full-text", "c": "full-text+vector", "d": "vector"}
    assert vectors.fuse([], ["x"]) == [("x", "vector")]
    assert vectors.levels_of([("x", "vector")]) == "vector"
    assert vectors.levels_of([("x", "full-text"), ("y", "full-text+vector")]) == "vector+full-text"
    assert vectors.levels_of([("x", "full-text")]) == "full-text"


@pytest.mark.parametrize("head", [b"\xff" * 8 + b"garbage", b"\x10\x00\x00\x00\x00\x00\x00\x00{}",
                                  b"\x04\x00\x00\x00\x00\x00\x00\x00[1] ", b"\x02\x00\x00\x00\x00\x00\x00\x00{}",
                                  b"\x03"])
def test_weights_that_are_not_safetensors_are_named_not_allocated(tmp_path: Path, head: bytes) -> None:
    """A garbage header's first 8 bytes were taken as the header's size: 'failed to load (MemoryError: )'."""
    from am.packs.embedding import WordLlamaEmbedder

    weights = tmp_path / "weights" / "l2_supercat_256.safetensors"
    weights.parent.mkdir()
    weights.write_bytes(head)
    with pytest.raises(ValueError, match=r"is not a safetensors file") as said:
        WordLlamaEmbedder(tmp_path, "0.0")
    assert str(weights) in str(said.value) and "pip install --force-reinstall wordllama" in str(said.value)


def test_weights_whose_table_the_file_does_not_hold_are_named(tmp_path: Path) -> None:
    from am.packs.embedding import WordLlamaEmbedder

    weights = tmp_path / "weights" / "l2_supercat_256.safetensors"
    weights.parent.mkdir()
    header = json.dumps({"embedding.weight": {"dtype": "F16", "shape": [4, 2], "data_offsets": [0, 16]}}).encode()
    weights.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    assert WordLlamaEmbedder(tmp_path, "0.0").dim == 2
    weights.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 15)  # cut short
    with pytest.raises(ValueError, match=r"is not a safetensors file .*cut short"):
        WordLlamaEmbedder(tmp_path, "0.0")


def test_the_architecture_keeps_numpy_out_of_a_plain_search(filled: Any, site: Path) -> None:
    """Without a vector level, a search process never imports numpy or a model."""
    code = ("import sys; from am.cli.main import main; sys.argv = ['am', '--vault', sys.argv[1], 'search', 'Alpha'];\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('numpy' in sys.modules, 'tokenizers' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([PYTHON, "-c", code, str(filled.root)], capture_output=True, text=True, check=True,
                          env=subprocess_env())
    assert proc.stderr.strip().splitlines()[-1] == "False False"
