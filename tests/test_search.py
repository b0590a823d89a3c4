"""Search: Chinese, Japanese and mixed queries, status hiding, id prefixes, time phrases, the command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from am.cli.main import cli
from am.cache.search import search, snippet
from am.errors import NotFoundError, UsageError
from am.vault import Vault
from tests.conftest import subprocess_env

NOW = datetime.fromisoformat("2026-11-29T12:00:00+08:00")  # a Sunday


def fact(fid: str, body: str, created: str, *, status: str = "active", topics: str = "[project-alpha]",
         extra: str = "") -> tuple[str, str]:
    day = created[:10].replace("-", "/")
    text = (f"---\ntype: fact\nid: {fid}\ntopics: {topics}\nstatus: {status}\nconfidence: high\n"
            f"provenance: human\n{extra}created: {created}\n---\n{body}\n")
    return f"facts/{day}/{fid}.md", text


FACTS = [
    fact("fact-zh-limit", "主分支上没有限流，查询走从库。", "2026-11-28T10:00:00+08:00"),
    fact("fact-zh-cache", "会话缓存三十分钟过期。", "2026-11-26T09:00:00+08:00"),
    fact("fact-ja-deploy", "先週のデプロイで障害が発生した。", "2026-11-18T15:00:00+08:00"),
    fact("fact-mixed", "Alpha 在 feat-rate-limit 分支上启用了限流 (Token Bucket).", "2026-11-03T08:00:00+08:00",
         extra="repo: project-alpha\n"),
    fact("fact-en-old", "Alpha has no Rate Limit on main.", "2026-10-01T08:00:00+08:00", status="superseded",
         extra="superseded_by: fact-mixed\n"),
    fact("fact-en-expired", "Redis was the session store.", "2026-09-01T08:00:00+08:00", status="expired"),
    fact("fact-other-topic", "Redis 查询超时五秒。", "2026-11-27T08:00:00+08:00", topics="[tool-redis]",
         extra="repo: project-beta\n"),
]


@pytest.fixture
def corpus(alpha: Vault, vault_path: Path, git: Callable[..., str]) -> Vault:
    alpha.add_topic(title="Redis", kind="tool", id="tool-redis", aliases=["缓存服务"])
    for rel, text in FACTS:
        path = vault_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git("add", "-A")
    git("commit", "-qm", "facts by hand")
    alpha.cache().refresh()  # the open vault refreshes at most once a second by itself
    return alpha


def ids(vault: Vault, query: str, **kw: object) -> list[str]:
    """Return the ids of the hits that hold every term of the query (ranked search also lists partial ones)."""
    return sorted(h.id for h in search(vault.cache(), query, at=NOW, **kw).hits  # type: ignore[arg-type]
                  if h.tier < 2)


def ranked(vault: Vault, query: str, **kw: object) -> list[tuple[str, str]]:
    """Return (id, explanation) of every hit, best first."""
    return [(h.id, h.explain()) for h in search(vault.cache(), query, at=NOW, **kw).hits]  # type: ignore[arg-type]


def test_two_character_chinese_words_inside_running_text(corpus: Vault) -> None:
    assert ids(corpus, "限流") == ["fact-mixed", "fact-zh-limit"]
    assert ids(corpus, "查询") == ["fact-other-topic", "fact-zh-limit"]
    assert ids(corpus, "缓存") == ["fact-zh-cache", "tool-redis"]  # a topic's alias counts
    assert ids(corpus, "从库") == ["fact-zh-limit"]
    # Not across punctuation: "限流，查询" holds no "流查".
    assert ids(corpus, "流查") == []


def test_japanese(corpus: Vault) -> None:
    assert ids(corpus, "障害") == ["fact-ja-deploy"]
    assert ids(corpus, "デプロイ") == ["fact-ja-deploy"]


def test_mixed_and_english_case_insensitive(corpus: Vault) -> None:
    assert ids(corpus, "Alpha 限流") == ["fact-mixed"]
    # Partial matches follow; a fact before a topic that merely names a word (issue 33.6: the query is no name).
    assert ranked(corpus, "Alpha 限流") == [
        ("fact-mixed", "matched 2 of 2 terms"), ("fact-zh-limit", "matched 1 of 2 terms"),
        ("project-alpha", "matched 1 of 2 terms")]
    assert ids(corpus, "token bucket") == ["fact-mixed"]
    assert ids(corpus, "REDIS") == ["fact-other-topic", "tool-redis"]


def test_superseded_and_expired_hidden_unless_asked(corpus: Vault) -> None:
    assert ids(corpus, "rate limit") == ["fact-mixed"]
    assert ids(corpus, "rate limit", include_superseded=True) == ["fact-en-old", "fact-mixed"]
    assert ids(corpus, "redis", include_superseded=True) == ["fact-en-expired", "fact-other-topic", "tool-redis"]
    assert ids(corpus, "redis", status="expired") == ["fact-en-expired"]


def test_id_prefix(corpus: Vault) -> None:
    assert ids(corpus, "fact-zh") == ["fact-zh-cache", "fact-zh-limit"]
    assert ids(corpus, "tool-red") == ["tool-redis"]


def test_filters(corpus: Vault) -> None:
    assert ids(corpus, "查询", topic="tool-redis") == ["fact-other-topic"]
    with pytest.raises(UsageError, match="--since 2026-12-01 is not before --until 2026-01-01"):
        search(corpus.cache(), "限流", since="2026-12-01", until="2026-01-01", at=NOW)
    # A record without a repo holds in every repo.
    assert ids(corpus, "限流", repo="project-alpha") == ["fact-mixed", "fact-zh-limit"]
    assert ids(corpus, "查询", repo="project-alpha") == ["fact-zh-limit"]


def test_an_unknown_topic_is_an_error_not_an_empty_answer(corpus: Vault, vault_path: Path,
                                                          git: Callable[..., str]) -> None:
    """--topic with a typo said "no results", as if nothing were known; a topic only facts name still narrows."""
    with pytest.raises(NotFoundError, match="no topic 'tool-rdis' in the vault; list them with: am topic list"):
        search(corpus.cache(), "查询", topic="tool-rdis", at=NOW)
    rel, text = fact("fact-gamma", "Gamma 查询 goes to the replica.", "2026-11-27T09:00:00+08:00",
                     topics="[project-gamma]")
    (vault_path / rel).write_text(text, encoding="utf-8")
    git("add", "-A")
    git("commit", "-qm", "a fact about a topic with no file")
    corpus.cache().refresh()
    assert ids(corpus, "查询", topic="project-gamma") == ["fact-gamma"]


@pytest.mark.parametrize("more", [(), ("--session",)])
def test_a_limit_past_sqlites_integers_means_all(corpus: Vault, vault_path: Path, more: tuple[str, ...]) -> None:
    """--limit 99999999999999999999 ended in OverflowError (a traceback): SQLite's integers stop at 2**63."""
    out = CliRunner().invoke(cli, ["--vault", str(vault_path), "search", "限流", "--limit", "9" * 20, *more])
    assert out.exit_code == 0, out.output
    assert more or "fact-zh-limit" in out.output


def test_one_record_matching_without_the_range_is_said_in_good_english(corpus: Vault) -> None:
    result = search(corpus.cache(), "障害 yesterday", at=NOW)
    assert result.without_range == 1
    assert result.notes()[0].endswith("; 1 record matches without it, shown below")


def test_a_query_without_words_lists_records_without_claiming_an_id_match(corpus: Vault, vault_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """"yesterday" (a time phrase alone) lists that day's records: they were not "matched by id"."""
    result = search(corpus.cache(), "yesterday", at=NOW)
    assert [h.id for h in result.hits] == ["fact-zh-limit"]
    assert [(h.matched, h.explain()) for h in result.hits] == [(0, "")]
    monkeypatch.setenv("AM_NOW", NOW.isoformat())
    out = CliRunner().invoke(cli, ["--vault", str(vault_path), "search", "yesterday", "--format", "json"])
    hit = json.loads(out.output)["hits"][0]
    assert hit["found"] == "full-text" and hit["explain"] == "" and hit["matched"]["how"] != "id"


@pytest.mark.parametrize(("query", "terms"), [("怎么", ("怎么",)), ("的 怎么", ("怎么",)), ("什么", ("什么",)),
                                             ("について", ("について",))])
def test_a_query_of_only_chinese_or_japanese_stop_words_searches_them(corpus: Vault, vault_path: Path,
                                                                      git: Callable[..., str], query: str,
                                                                      terms: tuple[str, ...]) -> None:
    """Stop words are kept when the query has nothing else, in every language: "怎么" listed the newest
    records, each "matched by id", instead of looking for the word."""
    rel, text = fact("fact-how", "这个问题怎么解决？什么时候都先看日志。日志について。",
                     "2026-11-20T09:00:00+08:00")
    (vault_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault_path / rel).write_text(text, encoding="utf-8")
    git("add", "-A")
    git("commit", "-qm", "a fact with stop words")
    corpus.cache().refresh()
    result = search(corpus.cache(), query, at=NOW)
    assert result.terms == terms
    assert [h.id for h in result.hits] == ["fact-how"]


@pytest.mark.parametrize("phrase", ["yesterday", "昨天", "昨日"])
def test_yesterday_in_three_languages(corpus: Vault, phrase: str) -> None:
    result = search(corpus.cache(), f"{phrase} 限流", at=NOW)
    assert [h.id for h in result.hits] == ["fact-zh-limit"]
    assert result.text == "限流"
    assert result.range is not None
    assert (result.range.since, result.range.until) == (datetime.fromisoformat("2026-11-28T00:00:00+08:00"),
                                                        datetime.fromisoformat("2026-11-29T00:00:00+08:00"))


@pytest.mark.parametrize("phrase", ["last week", "上周", "先週"])
def test_last_week_in_three_languages(corpus: Vault, phrase: str) -> None:
    # Only a time phrase: every record of that week, newest first (topics were made today, in real time).
    assert [h.id for h in search(corpus.cache(), phrase, at=NOW, types=("fact",)).hits] == ["fact-ja-deploy"]


@pytest.mark.parametrize("phrase", ["3 days ago", "3天前", "3日前"])
def test_days_ago_in_three_languages(corpus: Vault, phrase: str) -> None:
    assert [h.id for h in search(corpus.cache(), phrase, at=NOW, types=("fact",)).hits] == ["fact-zh-cache"]


def test_iso_range_and_since_until(corpus: Vault) -> None:
    assert ids(corpus, "2026-11-01..2026-11-27 限流") == ["fact-mixed"]
    assert ids(corpus, "限流", since="2026-11-10") == ["fact-zh-limit"]
    assert ids(corpus, "限流", until="2026-11-10") == ["fact-mixed"]
    assert ids(corpus, "this month", types=("fact",)) == [
        "fact-ja-deploy", "fact-mixed", "fact-other-topic", "fact-zh-cache", "fact-zh-limit"]


def test_snippet_marks_the_match() -> None:
    assert snippet("主分支上没有限流，查询走从库。", ["限流"]) == "主分支上没有**限流**，查询走从库。"
    long = "word " * 100 + "needle " + "word " * 100
    cut = snippet(long, ["needle"])
    assert "**needle**" in cut and cut.startswith("…") and cut.endswith("…") and len(cut) < 200


def test_snippet_bolds_whole_words_only() -> None:
    # am search f-2026 showed "**f**alls": with no whole word, a substring was bolded.
    assert snippet("The cache falls back to the replica.", ["f", "2026"]) == "The cache falls back to the replica."
    assert snippet("Use the x860 build, not x86.", ["x86"]) == "Use the x860 build, not **x86**."
    assert snippet("Use x86_64.", ["x86"]) == "Use **x86**_64."  # _ parts words, as in the index
    assert snippet("Alpha 在feat分支上启用了限流", ["feat", "限流"]) == "Alpha 在**feat**分支上启用了限流"
    assert snippet("Über cafés: café au lait.", ["café"]) == "Über cafés: **café** au lait."
    assert snippet("会话缓存三十分钟过期。", ["缓存"]) == "会话**缓存**三十分钟过期。"  # CJK has no spaces: a piece


def test_search_command_json_and_text(corpus: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AM_NOW", NOW.isoformat())
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(vault_path), "search", "限流", "yesterday", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [h["id"] for h in data["hits"]] == ["fact-zh-limit"]
    hit = data["hits"][0]
    assert hit["path"] == "facts/2026/11/28/fact-zh-limit.md" and hit["file"].endswith(hit["path"])
    assert hit["topics"] == ["project-alpha"] and "**限流**" in hit["snippet"]
    assert data["range"]["since"].startswith("2026-11-28T00:00:00")
    out = runner.invoke(cli, ["--vault", str(vault_path), "search", "rate", "limit"])
    assert out.exit_code == 0
    assert "fact-mixed" in out.output and "fact-en-old" not in out.output
    assert "facts/2026/11/03/fact-mixed.md" in out.output
    out = runner.invoke(cli, ["--vault", str(vault_path), "search", "nothing-like-this-anywhere"])
    assert out.exit_code == 0 and "no results" in out.output


def test_index_commands(corpus: Vault, vault_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(vault_path), "index", "status", "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["records"] == {"fact": 7, "topic": 2}
    out = runner.invoke(cli, ["--vault", str(vault_path), "index", "rebuild"])
    assert out.exit_code == 0 and "rebuilt the cache from 9 files" in out.output


def test_search_as_a_process(corpus: Vault, vault_path: Path) -> None:
    corpus.close()
    proc = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), "search", "障害"],
                          capture_output=True, text=True, env=subprocess_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("fact-ja-deploy")


def test_ranking_equals_one_plain_join_query(tmp_path: Path) -> None:
    """The two-step ranking (FTS5 alone, then the records) gives exactly the join's answer, ties by id."""
    from am.cache.query import BM25 as _BM25
    from am.cache.textseg import build_match
    from bench.corpus import write_vault

    write_vault(tmp_path / "bench", 400)
    with Vault.open(tmp_path / "bench") as v:
        index = v.cache()
        for query in ("retries", "限流", "session cache", "缓存 依赖", "the", "用户服务"):
            for filters in ({}, {"statuses": ("active",)}, {"topic": "project-t00005"},
                            {"since": datetime.fromisoformat("2024-06-01T00:00:00+08:00")}):
                for limit in (1, 5, 20, 200):
                    # mode="and" is the one-expression search ranked search builds on, kept as a baseline.
                    where, args = index._filters(**filters)
                    sql = ("SELECT r.id FROM search JOIN records r ON r.rowid = search.rowid WHERE search MATCH ?"
                           + "".join(f" AND {w}" for w in where) + f" ORDER BY {_BM25}, r.id LIMIT ?")
                    expected = [i for (i,) in index.conn.execute(sql, [build_match(query), *args, limit])]
                    got = [h.id for h in index.search(query, limit=limit, mode="and", **filters)]  # type: ignore[arg-type]
                    assert got == expected, (query, filters, limit)


def test_ties_past_the_first_cut_are_all_read(alpha: Vault, vault_path: Path, git: Callable[..., str]) -> None:
    """More records tied on BM25 than the first sorted cut holds (limit * 10 + 300): every tie is read, so the
    first ids win (though the cache took them in last), with the status filter and with a topic only the
    last of them are about."""
    index = alpha.cache()
    for batch in (range(40, 340), range(40)):  # the first ids last: the cache gives them the highest rowids
        for n in batch:
            status = "superseded" if n < 30 else "active"
            topics = "[tool-late]" if n >= 337 else "[project-alpha]"
            rel, text = fact(f"tie-{n:04d}", "The warm cache answers.", "2026-11-01T08:00:00+08:00",
                             status=status, topics=topics)
            path = vault_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        git("add", "-A")
        git("commit", "-qm", "tied facts by hand")
        index.refresh()
    names = [f"tie-{n:04d}" for n in range(340)]
    assert [h.id for h in index.search("warm cache", limit=3)] == names[:3]
    assert [h.id for h in index.search("warm cache", limit=1, statuses=("active",))] == names[30:31]
    assert [h.id for h in index.search("warm cache", limit=5, topic="tool-late")] == names[337:]
    assert [h.id for h in search(index, "warm cache", limit=2, at=NOW).hits] == names[30:32]


@pytest.mark.parametrize("query", ['"', 'a AND', 'NEAR(a b)', '*', 'col:x', '(((', "'; DROP TABLE records; --",
                                   "限流 OR", "-x", "^a", "\u200b", "x" * 500, "🙂 emoji"])
def test_hostile_queries_never_crash(corpus: Vault, query: str) -> None:
    try:
        result = search(corpus.cache(), query, at=NOW)
    except UsageError as err:  # '"', '*', '(((' and the like hold no word: said so, not a crash
        assert "has no word to search for" in str(err)
    else:
        assert isinstance(result.hits, tuple)


def test_search_refuses_a_repo_or_topic_that_does_not_exist(corpus: Vault, vault_path: Path) -> None:
    # --repo nope searched the records with no repo and exited 0; --topic nope said only "no results".
    from test_cli import am

    v = str(vault_path)
    code, out, err = am("--vault", v, "search", "限流", "--repo", "project-alfa")
    assert code == 13 and out == "" and "did you mean 'project-alpha'?" in err and "Traceback" not in err
    code, out, err = am("--vault", v, "search", "查询", "--topic", "tool-rediss")
    assert code == 4 and out == "" and "unknown topic 'tool-rediss'" in err and "did you mean 'tool-redis'?" in err
    code, out, err = am("--vault", v, "search", "查询", "--repo", "project-beta", "--topic", "tool-redis", "--format", "json")
    assert code == 0, err
    assert [h["id"] for h in json.loads(out)["hits"]] == ["fact-other-topic"]


@pytest.mark.parametrize("query", ["?", "🙂", "*", "  ", "... !!"])
def test_a_query_without_a_word_is_a_usage_error(corpus: Vault, vault_path: Path, query: str) -> None:
    """"?", "🙂" or "*" listed the 20 newest records, as if they matched; a time phrase alone still lists."""
    from am.mcp.server import Dispatcher, ServerOptions
    from test_cli import am

    with pytest.raises(UsageError, match="has no word to search for"):
        search(corpus.cache(), query, at=NOW)
    code, out, err = am("--vault", str(vault_path), "search", query)
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert err.startswith(f"Error: the query {query!r} has no word to search for"), err
    assert "search for a word, or give a time phrase like 'yesterday'" in err
    code, out, err = am("--vault", str(vault_path), "slice", "--query", query)
    assert code == 2 and out == "" and f"--query {query!r} has no word to search for" in err, err
    dispatcher = Dispatcher(ServerOptions(vault_root=vault_path, folder=vault_path))
    try:
        said = dispatcher.call_sync("search", {"query": query}, "word-client")
        assert isinstance(said, str) and said.startswith("Error: ") and "has no word to search for" in said, said
    finally:
        dispatcher.close()
    # A time phrase or --since names what to list.
    assert [h.id for h in search(corpus.cache(), f"{query} yesterday", at=NOW).hits] == ["fact-zh-limit"]
    assert "fact-zh-limit" in [h.id for h in search(corpus.cache(), query, since="2026-11-28", at=NOW).hits]


def test_index_status_says_one_record_in_the_singular(alpha: Vault, vault_path: Path) -> None:
    """A vault of one topic said 'plus the working tree: 1 topics'."""
    alpha.add_fact("One fact.", topics=["project-alpha"])
    alpha.add_fact("Another fact.", topics=["project-alpha"])
    out = CliRunner().invoke(cli, ["--vault", str(vault_path), "index", "status"])
    assert out.exit_code == 0, out.output
    assert "plus the working tree: 2 facts, 1 topic\n" in out.output
