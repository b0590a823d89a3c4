"""The vectors a long-lived reader holds in memory (am/cache/vecmatrix.py) follow every change of the cache.

A warm Index (as in the agents' server) ranks from a matrix in memory; after a
write, an edit made outside am, or a deletion it patches the rows the cache's
``vector_log`` names instead of reading every vector again. The oracle is a
matrix read afresh from the cache and, for the scores, the centred cosine
computed here from the stored float16 vectors.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from am.cache import vecmatrix, vectors
from am.cache.search import search
from tests.test_semantic import FACTS, QUESTION, concepts, filled, site  # noqa: F401 - fixtures


def _held(index: Any, model: Any) -> vecmatrix.Matrix:
    """The matrix the process holds for this cache file and model (one for every Index: a server's threads)."""
    return vectors._HELD[(str(index.path), model.name)]


def _warm(vault: Any, model: Any) -> tuple[Any, vecmatrix.Matrix]:
    index = vault.cache()
    index.refresh()
    search(index, QUESTION, embedder=model)
    return index, _held(index, model)


def _oracle(index: Any, query: Any) -> dict[int, float]:
    """Return rowid -> centred cosine, from the stored vectors, read with a connection of the test's own."""
    with sqlite3.connect(index.path) as conn:
        rows = conn.execute(
            "SELECT r.rowid, v.vec FROM records r JOIN files f ON f.path = r.path JOIN vectors v ON v.blob = f.blob "
            "WHERE r.type IN ('fact', 'topic') ORDER BY r.rowid").fetchall()
    matrix = np.stack([np.frombuffer(v, dtype=np.float16).astype(np.float64) for _, v in rows])
    mean = matrix.mean(axis=0)
    centred = matrix - mean
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)
    q = np.asarray(query, dtype=np.float64) - mean
    q /= np.linalg.norm(q)
    return {r: float(s) for (r, _), s in zip(rows, centred @ q)}


def _same_as_fresh(index: Any, held: vecmatrix.Matrix, model: Any) -> None:
    fresh = vecmatrix.load(np, index, held.checked)
    assert held.rowids.tolist() == fresh.rowids.tolist()
    assert np.array_equal(held.raw, fresh.raw)
    q = model.embed([QUESTION])[0]
    expected = _oracle(index, q)
    assert sorted(expected) == held.rowids.tolist()
    got = dict(zip(held.rowids.tolist(), held.scores(np, q).tolist()))
    assert got == pytest.approx(expected, abs=1e-5)


def test_a_write_an_outside_edit_and_a_deletion_patch_the_rows_in_memory(filled: Any, site: Path) -> None:  # noqa: F811
    model = concepts(site)
    index, held = _warm(filled, model)
    _same_as_fresh(index, held, model)
    # A write through am: one new row, caught up from the log (the same object, not read again).
    filled.add_fact("Logins expire after a week of silence.", topics=["project-alpha"], id="fact-expire")
    index = filled.cache()
    index.refresh()
    found = search(index, QUESTION, embedder=model)
    assert _held(index, model) is held
    assert "fact-expire" in [h.id for h in found.hits if "vector" in h.found]
    _same_as_fresh(index, held, model)
    # An edit made outside am changes a fact's meaning: its row changes in place.
    path = filled.root / next(p for p, r in index.records(ids=["fact-db"]))
    path.write_text(path.read_text().replace("The Postgres pool is capped at 40 connections.",
                                             "Signed-in sessions last a long time."))
    before = held.raw.copy()
    index.refresh()
    found = search(index, QUESTION, embedder=model)
    assert _held(index, model) is held and not np.array_equal(before, held.raw)
    assert "fact-db" in [h.id for h in found.hits]
    _same_as_fresh(index, held, model)
    # A deleted fact leaves the matrix and the hits.
    path = filled.root / next(p for p, r in index.records(ids=["fact-session"]))
    path.unlink()
    index.refresh()
    found = search(index, QUESTION, embedder=model)
    assert _held(index, model) is held
    assert "fact-session" not in [h.id for h in found.hits]
    assert len(held.rowids) == len(FACTS) + 1 - 1 + 1  # four facts and the topic, one added, one gone
    _same_as_fresh(index, held, model)


def test_a_reader_behind_a_pruned_log_reads_every_vector_again(filled: Any, site: Path,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    model = concepts(site)
    index, held = _warm(filled, model)
    monkeypatch.setattr(vectors, "LOG_KEEP", 0)  # every write prunes the whole log
    filled.add_fact("Logins expire after a week of silence.", topics=["project-alpha"], id="fact-expire")
    index = filled.cache()
    index.refresh()
    found = search(index, QUESTION, embedder=model)
    again = _held(index, model)
    assert again is not held  # read afresh: the log no longer says what changed
    assert "fact-expire" in [h.id for h in found.hits]
    _same_as_fresh(index, again, model)


def test_the_threads_of_a_server_share_one_matrix_and_each_search_ranks_a_whole_one(
        filled: Any, site: Path) -> None:  # noqa: F811
    """Each worker thread has its own Vault and cache connection; the vectors are held once a process.

    While one thread writes, the others keep searching: a catch-up builds new arrays, so a search
    never ranks half-patched rows (the scores of every search are those of some whole matrix).
    """
    import threading

    from am.vault import Vault

    model = concepts(site)
    index, held = _warm(filled, model)
    readers = [Vault.open(filled.root) for _ in range(3)]
    try:
        for vault in readers:
            other = vault.cache()
            assert search(other, QUESTION, embedder=model).hits[0].id == "fact-session"
            assert _held(other, model) is held
        views = [vectors._load(vault.cache(), model.name) for vault in readers]
        assert all(v.raw is held.raw and v is not held for v in views)
        errors: list[BaseException] = []
        stop = threading.Event()

        def keep_searching(vault: Any) -> None:
            try:
                while not stop.is_set():
                    mine = vault.cache()
                    found = [h.id for h in search(mine, QUESTION, embedder=model).hits]
                    assert "fact-session" in found
                    view = vectors._load(mine, model.name)  # whole: its norms are its rows'
                    centred = view.raw - view.mean
                    assert np.allclose(np.linalg.norm(centred, axis=1), view.norms, atol=1e-4)
            except BaseException as err:  # noqa: BLE001 - reported to the test's thread below
                errors.append(err)

        threads = [threading.Thread(target=keep_searching, args=(vault,)) for vault in readers]
        for thread in threads:
            thread.start()
        for n in range(4):
            filled.add_fact(f"Logins expire after {n + 2} weeks of silence.", topics=["project-alpha"], id=f"fact-x{n}")
            index = filled.cache()
            index.refresh()
            search(index, QUESTION, embedder=model)
        stop.set()
        for thread in threads:
            thread.join()
        assert errors == []
        assert _held(index, model) is held  # patched from the log, never read again
        for vault in readers:
            assert "fact-x3" in [h.id for h in search(vault.cache(), QUESTION, embedder=model).hits]
        _same_as_fresh(index, _held(index, model), model)
    finally:
        for vault in readers:
            vault.close()
