"""Tests for am.cache.textseg against a real SQLite FTS5 table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from am.cache.textseg import build_match, id_prefix_terms, segment_for_index

ALPHA = "Alpha 在主分支上只提供单个查询接口，没有限流。"
DEPLOY = "先週のデプロイで障害が発生した"
DOCS = {
    1: ALPHA,
    2: DEPLOY,
    3: "Batch getUsers(ids) landed on main; the getUser endpoint stays.",
    4: "主分支",
    5: "分支，支主",
    6: "Über café résumé",
    7: "서울에서 배포했습니다",
    8: "ＦＵＬＬ width and ｶﾀｶﾅ",
    9: "黒猫",
    10: "The getUser call now has 限流 too",
}


@pytest.fixture(scope="module")
def db() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        'CREATE VIRTUAL TABLE t USING fts5(body, tokenize = "unicode61 remove_diacritics 2")'
    )
    conn.executemany(
        "INSERT INTO t(rowid, body) VALUES (?, ?)",
        [(rowid, segment_for_index(text)) for rowid, text in DOCS.items()],
    )
    yield conn
    conn.close()


def search(db: sqlite3.Connection, query: str) -> set[int]:
    expression = build_match(query)
    assert expression is not None, query
    rows = db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    return {rowid for (rowid,) in rows}


# --- segment_for_index -----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alpha 在主分支", "alpha 在主 主分 分支 支"),
        ("没有限流。", "没有 有限 限流 流"),
        ("a 我 b", "a 我 b"),
        ("getUser(id)", "getus id"),
        ("getUser接口", "getus 接口 口"),
        ("限流3天前", "限流 流 3 天前 前"),
        ("デプロイ", "デプ プロ ロイ イ"),
        ("ｶﾀｶﾅ", "カタ タカ カナ ナ"),  # NFKC: half-width katakana
        ("ＡＢＣ", "abc"),  # NFKC: full-width Latin
        ("한국어", "한국 국어 어"),
        ("「引用」・中黒", "引用 用 中黒 黒"),
        ("snake_case, kebab-case!", "snake case kebab case"),
        ("", ""),
        ("!!! ... ???", ""),
    ],
)
def test_segment_for_index(text: str, expected: str) -> None:
    assert segment_for_index(text) == expected


# --- build_match: exact expressions ----------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("限流", '"限流"'),
        ("限流策略", '"限流 流策 策略"'),
        ("限", '"限"*'),
        ("getUser 限流", '"getus" AND "限流"'),
        ("Rate LIMIT", '"rate" AND "limit"'),
        ("rate rate", '"rate"'),
        ('"a" AND NEAR(b) -c:d *', '"a" AND "and" AND "near" AND "b" AND "c" AND "d"'),
        ("デプロイ", '"デプ プロ ロイ"'),
    ],
)
def test_build_match_expression(query: str, expected: str) -> None:
    assert build_match(query) == expected


@pytest.mark.parametrize("query", ["", "   ", "!!!", "()", '"', "*", "-", ":", "🙂🙂", "。、"])
def test_build_match_none_without_terms(query: str) -> None:
    assert build_match(query) is None


# --- build_match against real FTS5 -----------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # two-character Chinese words inside running text
        ("限流", {1, 10}),
        ("查询", {1}),
        ("接口", {1}),
        # longer phrases
        ("单个查询接口", {1}),
        ("主分支", {1, 4}),
        ("没有限流", {1}),
        # Japanese: katakana, kanji, and a run that crosses scripts
        ("デプロイ", {2}),
        ("障害", {2}),
        ("障害が発生", {2}),
        # mixed scripts and English, case-insensitive
        ("getUser 限流", {10}),
        ("getUser 查询", set()),
        ("alpha 限流", {1}),
        ("ALPHA", {1}),
        ("GETUSER", {3, 10}),
        ("getusers ids", {3}),
        # diacritics folded, NFKC on both sides
        ("uber cafe resume", {6}),
        ("full カタカナ", {8}),
        ("ＦＵＬＬ ｶﾀｶﾅ", {8}),
        # Korean
        ("서울", {7}),
        # a single character finds it at the start, middle and end of a run
        ("黒", {9}),
        ("猫", {9}),
        ("限", {1, 10}),
        ("流", {1, 10}),
    ],
)
def test_search_finds(db: sqlite3.Connection, query: str, expected: set[int]) -> None:
    assert search(db, query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "分支主",  # its bigrams 分支, 支主 exist in doc 5 but across a comma
        "限流策略",  # 限流 exists, the rest does not
        "流没",  # bigram across 。 boundary in doc 1
        "口没有",  # spans "接口，没有"
        "発生障害",  # the words exist, not in this order
        "ratelimit",
        "redis",
        "デプロイ障害",
    ],
)
def test_search_does_not_find(db: sqlite3.Connection, query: str) -> None:
    assert search(db, query) == set()


def test_word_not_in_text_is_not_found_but_parts_are(db: sqlite3.Connection) -> None:
    # Guard against a test that cannot fail: the pieces do match on their own.
    assert search(db, "分支") == {1, 4, 5}
    assert search(db, "支主") == {5}
    assert search(db, "分支主") == set()


HOSTILE = [
    '"',
    '""',
    '"unbalanced',
    "a\"b'c",
    "(",
    ")",
    "(限流",
    "AND",
    "OR",
    "NOT",
    "a AND",
    "NEAR(a b, 2)",
    "NEAR",
    "*",
    "a*",
    "*限",
    "-",
    "-a",
    "a:b",
    "body:限流",
    "{body}: x",
    "^a",
    "a + b",
    "🙂",
    "限🙂流",
    "a\x00b",
    "\\",
    "%_",
    "'; DROP TABLE t; --",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_make_fts5_raise(db: sqlite3.Connection, query: str) -> None:
    expression = build_match(query)
    if expression is not None:
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=60))
def test_build_match_never_makes_fts5_raise(db: sqlite3.Connection, query: str) -> None:
    expression = build_match(query)
    if expression is None:
        assert segment_for_index(query) == ""
    else:
        db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


CJK_AND_LATIN = st.text(
    alphabet=st.sampled_from(list("限流查询接口主分支先週のデプロイ障害abcXYZ019 ，。-")),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200)
@given(text=CJK_AND_LATIN, data=st.data())
def test_any_contiguous_piece_of_a_text_finds_it(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    piece = text[start:end]
    expression = build_match(piece)
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(
            'CREATE VIRTUAL TABLE t USING fts5(body, tokenize = "unicode61 remove_diacritics 2")'
        )
        conn.execute("INSERT INTO t(rowid, body) VALUES (1, ?)", (segment_for_index(text),))
        if expression is None:
            assert segment_for_index(piece) == ""
            return
        rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    finally:
        conn.close()
    # A Latin word cut in the middle is a different word; every other piece is found.
    cut_word = (start > 0 and text[start - 1 : start + 1].isascii()
                and text[start - 1].isalnum() and text[start].isalnum()) or (
        end < len(text) and text[end - 1 : end + 1].isascii()
        and text[end - 1].isalnum() and text[end].isalnum()
    )  # fmt: skip
    if not cut_word:
        assert rows == [(1,)], (text, piece, expression)


# --- id_prefix_terms -------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("f-2026", ["f-2026"]),
        ("project-al rate limit", ["project-al"]),
        ("[[project-alpha]] and Tool-Redis", ["project-alpha", "tool-redis"]),
        ("project-alpha--depends-on--tool-redis", ["project-alpha--depends-on--tool-redis"]),
        ("限流f-20260923-1630", ["f-20260923-1630"]),
        ("project-", ["project-"]),
        ("f-2026 f-2026", ["f-2026"]),
        ("alpha getUser 限流", []),
        ("-x --flag", []),
        ("snake_case-x", []),
        ("", []),
    ],
)
def test_id_prefix_terms(query: str, expected: list[str]) -> None:
    assert id_prefix_terms(query) == expected


@given(query=st.text(max_size=60))
def test_id_prefix_terms_are_safe_for_like(query: str) -> None:
    for term in id_prefix_terms(query):
        assert term and term[0].isalnum() and "-" in term
        assert set(term) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
