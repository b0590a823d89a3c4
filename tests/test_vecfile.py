"""The vector file a one-shot search ranks from without numpy (am/cache/vecfile.py) follows every change of the cache.

``am search`` is a new process each time: instead of importing numpy and reading
every vector out of the SQLite rows it reads ``vectors.f16`` beside the cache,
patches the rows ``vector_log`` names since the file was written, and ranks with
SimSIMD. The oracles are the numpy matrix of a long-lived reader
(am/cache/vecmatrix.py, itself held to a centred cosine computed in
tests/test_vecmatrix.py) and the rows read afresh with a connection of the test's own.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from am.cache import vecfile, vecmatrix, vectors
from am.cache.search import search
from tests.test_semantic import QUESTION, concepts, filled, site  # noqa: F401 - fixtures


class OneShot:
    """The concepts embedder with ``vector(text)``: what lets a one-shot search take the file's path."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    def embed(self, texts: Any) -> Any:
        return self.inner.embed(texts)

    def vector(self, text: str) -> list[float]:
        return [float(x) for x in self.inner.embed([text])[0]]


def _fresh_rows(index: Any) -> tuple[list[int], bytes]:
    """Every fact's and topic's row id and vector, read with a connection of the test's own."""
    with sqlite3.connect(index.path) as conn:
        found = conn.execute(vecmatrix.ROWS + " ORDER BY r.rowid").fetchall()
    return [r for r, _ in found], b"".join(v for _, v in found)


def _matches_the_cache(index: Any, model: Any) -> vecfile.Rows:
    """The file on disk holds exactly the cache's rows, their sum, and ranks as the numpy matrix does."""
    rows = vecfile.read(vecfile.path_of(index))
    assert rows is not None
    ids, data = _fresh_rows(index)
    assert rows.rowids.tolist() == ids and rows.data == data and rows.seq == vecmatrix.last_seq(index)
    expected = np.frombuffer(data, dtype=np.float16).reshape(len(ids), -1).astype(np.float64).sum(axis=0)
    assert rows.total == pytest.approx(expected.tolist(), abs=1e-9)
    held = vecmatrix.load(np, index, ())
    q = model.vector(QUESTION)
    simsimd = vecfile.ranker()
    assert vecfile.scores(simsimd, rows, q) == pytest.approx(held.scores(np, np.asarray(q)).tolist(), abs=1e-6)
    return rows


@pytest.fixture
def one_shot(site: Path) -> OneShot:  # noqa: F811
    return OneShot(concepts(site))


def _search_once(vault: Any, model: Any, query: str = QUESTION) -> list[tuple[str, float]]:
    index = vault.cache()
    vectors.ensure(index, model)
    return [(h.id, s) for h, s in vectors.search(index, model, query, limit=10, once=True)]


def test_a_one_shot_search_ranks_from_the_file_as_the_matrix_does(filled: Any, one_shot: OneShot) -> None:  # noqa: F811
    index = filled.cache()
    vectors.ensure(index, one_shot)
    path = vecfile.path_of(index)
    assert not path.exists()
    once = _search_once(filled, one_shot)
    assert path.exists()
    held = [(h.id, s) for h, s in vectors.search(index, one_shot, QUESTION, limit=10)]
    assert [i for i, _ in once] == [i for i, _ in held] and once[0][0] == "fact-session"
    assert [s for _, s in once] == pytest.approx([s for _, s in held], abs=1e-6)
    _matches_the_cache(index, one_shot)
    # The whole search, fused with full text, answers the same either way.
    both = [search(index, QUESTION, embedder=one_shot, vector_once=once).hits for once in (True, False)]
    assert [(h.id, h.found) for h in both[0]] == [(h.id, h.found) for h in both[1]]


def test_the_file_catches_up_with_a_write_an_outside_edit_and_a_deletion(filled: Any, one_shot: OneShot,  # noqa: F811
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _search_once(filled, one_shot)
    index = filled.cache()
    first = vecfile.read(vecfile.path_of(index))
    assert first is not None

    def refuse(*args: Any) -> None:
        raise AssertionError("every row read again: the file should have been patched from the log")

    monkeypatch.setattr(vecfile, "_read_all", refuse)
    filled.add_fact("Logins expire after a week of silence.", topics=["project-alpha"], id="fact-expire")
    assert "fact-expire" in [i for i, _ in _search_once(filled, one_shot)]
    index = filled.cache()
    after = _matches_the_cache(index, one_shot)
    assert after.seq > first.seq and len(after) == len(first) + 1
    # An edit made outside am: the record's row goes and comes back with another vector.
    path = filled.root / next(p for p, r in index.records(ids=["fact-db"]))
    path.write_text(path.read_text().replace("The Postgres pool is capped at 40 connections.",
                                             "Signed-in sessions last a long time."))
    index.refresh()
    assert "fact-db" in [i for i, _ in _search_once(filled, one_shot)]
    _matches_the_cache(filled.cache(), one_shot)
    # A deleted fact leaves the file and the hits.
    path = filled.root / next(p for p, r in index.records(ids=["fact-session"]))
    path.unlink()
    index.refresh()
    assert "fact-session" not in [i for i, _ in _search_once(filled, one_shot)]
    assert len(_matches_the_cache(filled.cache(), one_shot)) == len(after) - 1


def test_a_rebuilt_cache_a_damaged_file_or_a_pruned_log_is_read_afresh(filled: Any, one_shot: OneShot,  # noqa: F811
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _search_once(filled, one_shot)
    index = filled.cache()
    path = vecfile.path_of(index)
    old = vecfile.read(path)
    assert old is not None
    index.rebuild()  # another cache file: another epoch, whatever its log says
    index = filled.cache()
    vectors.ensure(index, one_shot)
    rows = vecfile.load(index, one_shot.name, vecfile.ranker())
    assert rows is not None and rows.epoch != old.epoch
    _matches_the_cache(index, one_shot)
    path.write_bytes(path.read_bytes()[:-3])  # cut short: not whole, so not trusted
    assert vecfile.read(path) is None
    assert _search_once(filled, one_shot)[0][0] == "fact-session"
    _matches_the_cache(index, one_shot)
    # A log pruned past what the file saw: every row read again.
    monkeypatch.setattr(vectors, "LOG_KEEP", 0)
    filled.add_fact("Logins expire after a week of silence.", topics=["project-alpha"], id="fact-expire")
    assert "fact-expire" in [i for i, _ in _search_once(filled, one_shot)]
    _matches_the_cache(filled.cache(), one_shot)


def test_the_ranker_accumulates_in_float32_and_keeps_float32_precision() -> None:
    simsimd = vecfile.ranker()
    assert simsimd is not None
    rng = np.random.default_rng(7)
    matrix = rng.normal(0, 0.06, (500, 64)).astype(np.float16)
    rows = vecfile.Rows("e", "m", 0, 64, vecfile.array("q", range(500)), matrix.tobytes(),
                        matrix.astype(np.float64).sum(axis=0).tolist())
    query = rng.normal(0, 0.06, 64).astype(np.float32)
    raw = matrix.astype(np.float64)
    mean = raw.mean(axis=0).astype(np.float32).astype(np.float64)
    q = query - mean
    expected = (raw - mean) @ (q / np.linalg.norm(q)) / np.linalg.norm(raw - mean, axis=1)
    assert vecfile.scores(simsimd, rows, query.tolist()) == pytest.approx(expected.tolist(), abs=1e-6)
    assert vecfile.ranked([0.5, 0.2, 0.5, 0.05, 0.9], 0.1, 2) == [[4, 0], [2, 1]]


def test_without_the_ranker_a_one_shot_search_ranks_with_numpy(filled: Any, one_shot: OneShot,  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vecfile, "_RANKER", [None])  # SimSIMD missing, or unable to accumulate in float32
    found = _search_once(filled, one_shot)
    assert found[0][0] == "fact-session" and not vecfile.path_of(filled.cache()).exists()


def test_the_rows_sum_the_same_without_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = np.random.default_rng(3).normal(0, 0.06, (2500, 16)).astype(np.float16)  # more than one chunk
    expected = vecfile._sum_rows(matrix.tobytes(), 2500, 16)
    assert expected == pytest.approx(matrix.astype(np.float64).sum(axis=0).tolist(), abs=1e-12)
    monkeypatch.setitem(__import__("sys").modules, "numpy", None)  # import numpy now raises ImportError
    assert vecfile._sum_rows(matrix.tobytes(), 2500, 16) == pytest.approx(expected, abs=1e-9)


def test_the_centred_lengths_are_the_same_bits_with_numpy_loaded_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    import simsimd  # the test extra has it; the two paths share its products, whatever they accumulate in

    matrix = np.random.default_rng(5).normal(0, 0.06, (3000, 32)).astype(np.float16)
    total = matrix.astype(np.float64).sum(axis=0).tolist()

    def centred() -> bytes:
        rows = vecfile.Rows("e", "m", 0, 32, __import__("array").array("q", range(3000)), matrix.tobytes(), total)
        vecfile.centre(simsimd, rows)
        assert rows.inv is not None and len(rows.inv) == 3000
        return rows.inv.tobytes()

    with_numpy = centred()  # numpy is loaded in this process: computed in C
    monkeypatch.setitem(__import__("sys").modules, "numpy", None)  # as in a process that never imported it
    assert centred() == with_numpy
