"""Search's re-ranking (issue 35.2, 33.6): fixed-depth candidates, the floor for meaning alone,
the neighbouring record, and facts before topics that merely name the words.

Small vaults written through am's import; the vector level through the tiny embedder of
tests/test_semantic.py, installed as a package. The recall figures are bench/locomo.py's.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from am.cache import rerank
from am.cache.search import search
from am.records.ids import format_timestamp
from am.records.model import Fact, Topic
from tests.test_semantic import FACTS, QUESTION, concepts, site  # noqa: F401 - site is a fixture

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
WORDS = ["parser", "cache", "deploy", "retry", "budget", "queue", "token", "index", "session", "release", "postgres"]


def _write(vault: Any, records: list[Any]) -> Any:
    vault.import_records(records, source="test", allow_secrets=True)
    index = vault.cache()
    assert index is not None
    return index


def _fact(n: int, body: str, *, minutes: int, topics: tuple[str, ...] = ("project-talk",)) -> Fact:
    moment = START + timedelta(minutes=minutes)
    return Fact(id=f"f-{moment:%Y%m%d-%H%M}-{n:06x}", topics=topics, body=body + "\n",
                created=format_timestamp(moment))


def _ids(index: Any, query: str, **kw: Any) -> list[str]:
    return [h.id for h in search(index, query, notes=False, **kw).hits]


def test_the_first_hits_do_not_depend_on_the_limit(vault: Any) -> None:
    index = _write(vault, _many())
    for query in ("parser cache retry", "token budget queue index session", "deploy"):
        full = _ids(index, query, limit=40)
        assert len(full) >= 10
        for k in (1, 3, 5, 10):
            assert _ids(index, query, limit=k) == full[:k], (query, k)


def _many() -> list[Fact]:
    """150 facts holding one to four of the words, days apart (no neighbours): many partial matches."""
    return [_fact(n, " ".join(WORDS[(n * 7 + k * 3) % len(WORDS)] for k in range(1 + n % 4))
                  + " and more" * (n % 5) + f" note {n}.", minutes=n * 60 * 24)
            for n in range(150)]


def test_a_record_whose_neighbour_holds_the_other_words_ranks_first(vault: Any) -> None:
    # A conversation: a question naming "parser", its answer a minute later naming "library";
    # five days later an unrelated record naming "library" alone. Both hold one word; the answer's
    # neighbour holds the other.
    index = _write(vault, [
        _fact(1, "Caroline: which parser did you pick in the end?", minutes=0),
        _fact(2, "Melanie: the small library from the standard distribution.", minutes=1),
        _fact(3, "The library opens at nine on weekdays.", minutes=5 * 24 * 60),
        _fact(4, "Lunch was at the cafe.", minutes=10 * 24 * 60),
    ])
    hits = _ids(index, "parser library")
    assert hits.index(records_id(2)) < hits.index(records_id(3))
    # Further apart than the gap, they are no neighbours: BM25 decides (the shorter record first).
    assert rerank.GAP < 5 * 24 * 3600


def records_id(n: int) -> str:
    moment = START + timedelta(minutes={1: 0, 2: 1, 3: 5 * 24 * 60, 4: 10 * 24 * 60}[n])
    return f"f-{moment:%Y%m%d-%H%M}-{n:06x}"


def test_facts_come_before_topics_that_merely_name_the_words(vault: Any) -> None:
    index = _write(vault, [
        Topic(id="tool-redis", kind="tool", title="Redis", created=format_timestamp(START),
              body="Redis, the key-value store.\n"),
        _fact(1, "Sessions expire after 30 minutes.", minutes=60 * 24, topics=("tool-redis",)),
        _fact(2, "Redis keeps the sessions of project alpha.", minutes=2 * 60 * 24, topics=("tool-redis",)),
    ])
    # The topic's title weighs most in BM25, but it only names one word of the question.
    hits = _ids(index, "where does redis keep sessions")
    assert hits.index("tool-redis") > max(hits.index(records_id_plain(1)), hits.index(records_id_plain(2)))
    # A query that is the topic's name keeps the topic among the first.
    assert "tool-redis" in _ids(index, "redis", limit=2)


def records_id_plain(n: int) -> str:
    moment = START + timedelta(minutes=n * 60 * 24)
    return f"f-{moment:%Y%m%d-%H%M}-{n:06x}"


@pytest.fixture
def filled(alpha: Any) -> Any:
    for fid, text in FACTS:
        alpha.add_fact(text, topics=["project-alpha"], id=fid)
    return alpha


def test_meaning_alone_needs_the_floor_and_nothing_is_served_by_nothing(
        filled: Any, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 - the fixture
    index = filled.cache()
    embedder = concepts(site)
    found = search(index, QUESTION, embedder=embedder, notes=False)
    alone = [h for h in found.hits if h.found == "vector"]
    assert "fact-session" in [h.id for h in alone]
    assert all(-h.rank >= rerank.FLOOR for h in alone)
    # Above every cosine, meaning alone brings nothing; the words still answer what they can.
    monkeypatch.setattr(rerank, "FLOOR", 1.01)
    assert [h for h in search(index, QUESTION, embedder=embedder, notes=False).hits if h.found == "vector"] == []
    monkeypatch.undo()
    # A word nothing holds, whose meaning no record shares: no hit, served by none.
    nothing = search(index, "throttling", embedder=embedder, notes=False)
    assert nothing.hits == () and nothing.served == "none"


def test_the_first_hits_with_vectors_do_not_depend_on_the_limit(vault: Any, site: Path) -> None:  # noqa: F811
    index = _write(vault, _many())
    embedder = concepts(site)
    for query in ("how long do sessions last", "deploy release budget", "postgres token queue"):
        full = [h.id for h in search(index, query, embedder=embedder, notes=False, limit=40).hits]
        for k in (1, 3, 5, 10):
            assert [h.id for h in search(index, query, embedder=embedder, notes=False, limit=k).hits] == full[:k]
