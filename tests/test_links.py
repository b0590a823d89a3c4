"""Tests for am.records.links: wikilink forms, code exclusion, line numbers, hostile input."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.records.links import Link, link_targets, parse_links


def only(body: str) -> Link:
    links = parse_links(body)
    assert len(links) == 1, links
    return links[0]


# --- forms -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target", "vault", "heading", "label"),
    [
        ("[[project-alpha]]", "project-alpha", None, None, None),
        ("[[project-alpha|Alpha]]", "project-alpha", None, None, "Alpha"),
        ("[[project-alpha#Usage]]", "project-alpha", None, "Usage", None),
        ("[[project-alpha#Usage|the usage]]", "project-alpha", None, "Usage", "the usage"),
        ("[[other:project-alpha]]", "project-alpha", "other", None, None),
        ("[[other:project-alpha|A]]", "project-alpha", "other", None, "A"),
        ("[[other:project-alpha#Usage]]", "project-alpha", "other", "Usage", None),
        ("[[other:project-alpha#Usage|A]]", "project-alpha", "other", "Usage", "A"),
        ("[[  project-alpha  |  Alpha  ]]", "project-alpha", None, None, "Alpha"),
        ("[[ other : project-alpha # Usage | A ]]", "project-alpha", "other", "Usage", "A"),
        ("[[project-alpha|]]", "project-alpha", None, None, None),
        ("[[project-alpha#]]", "project-alpha", None, None, None),
        ("[[a|b|c]]", "a", None, None, "b|c"),
        ("[[a#h1#h2]]", "a", None, "h1#h2", None),
        ("[[a|x#y]]", "a", None, None, "x#y"),
        ("[[project-alpha.md]]", "project-alpha", None, None, None),
        ("[[Alpha 服务]]", "Alpha 服务", None, None, None),
        ("[[topics/project-alpha]]", "topics/project-alpha", None, None, None),
    ],
)
def test_forms(
    text: str, target: str, vault: str | None, heading: str | None, label: str | None
) -> None:
    assert only(f"See {text} here.") == Link(target, vault, label, heading, 1)


@pytest.mark.parametrize(
    "text",
    [
        "[[]]",
        "[[   ]]",
        "[[|label]]",
        "[[#heading]]",
        "[[ #heading|label ]]",
        "[[:id]]",
        "[[vault:]]",
        "[[vault: ]]",
        "[[a:b:c]]",
        "[[a[b]]",
        "[[a]b]]",
        "[[a\nb]]",
        "[[a\x00b]]",
        "[[a]",
        "[a]]",
        "[ [a]]",
        "[[a] ]",
        "\\[[a]]",
    ],
)
def test_not_links(text: str) -> None:
    assert parse_links(f"x {text} y") == []


def test_document_order_and_duplicates_kept() -> None:
    body = "[[b]] then [[a]] then [[b|again]]\n\n[[other:b]]"
    assert [(link.vault, link.target) for link in parse_links(body)] == [
        (None, "b"),
        (None, "a"),
        (None, "b"),
        ("other", "b"),
    ]


def test_link_targets_deduplicated_in_order() -> None:
    body = "[[b]] [[a|A]] [[b#h]] [[other:b]] [[other:b|x]] [[a]]"
    assert link_targets(body) == ["b", "a", "other:b"]


def test_empty_and_linkless_bodies() -> None:
    assert parse_links("") == []
    assert link_targets("") == []
    assert parse_links("plain [text](url) and [ref] and [x]: y") == []


# --- where links are and are not ------------------------------------------------


def test_code_spans_are_not_links() -> None:
    body = "`[[a]]` and ``x [[b]] `y` `` and [[c]] and `unclosed [[d]]"
    assert link_targets(body) == ["c", "d"]


def test_fenced_and_indented_code_are_not_links() -> None:
    body = (
        "```\n[[fenced]]\n```\n\n"
        "~~~python\nx = '[[tilde]]'\n~~~\n\n"
        "    [[indented]]\n\n"
        "[[real]]\n"
    )
    assert link_targets(body) == ["real"]


def test_unclosed_fence_swallows_rest() -> None:
    assert parse_links("[[a]]\n\n```\n[[b]]\n[[c]]\n") == [Link("a", None, None, None, 1)]


def test_html_blocks_and_tag_attributes_are_not_links() -> None:
    body = (
        "<div>\n[[in-html-block]]\n</div>\n\n"
        "<!-- [[in-comment]] -->\n\n"
        'text <span title="[[in-attribute]]">[[in-span]]</span>\n'
    )
    assert link_targets(body) == ["in-span"]


def test_links_in_headings_lists_quotes_tables_and_emphasis() -> None:
    body = (
        "# Title [[h1]]\n"  # 1
        "\n"
        "Setext [[h2]]\n"  # 3
        "======\n"
        "\n"
        "- item [[li1]]\n"  # 6
        "  1. nested [[li2]]\n"  # 7
        "\n"
        "> quote\n"  # 9
        "> [[bq]]\n"  # 10
        "\n"
        "| a | b |\n"  # 12
        "|---|---|\n"
        "| [[t1]] | x |\n"  # 14
        "| y | [[t2\\|Two]] |\n"  # 15
        "\n"
        "*[[em]]* and **[[strong]]** and [see [[in-label]]](https://example.org)\n"  # 17
    )
    assert [(link.target, link.label, link.line) for link in parse_links(body)] == [
        ("h1", None, 1),
        ("h2", None, 3),
        ("li1", None, 6),
        ("li2", None, 7),
        ("bq", None, 10),
        ("t1", None, 14),
        ("t2", "Two", 15),
        ("em", None, 17),
        ("strong", None, 17),
        ("in-label", None, 17),
    ]


def test_line_numbers_in_multiline_paragraphs() -> None:
    body = "intro\n\nfirst [[a]]\nsecond [[b]] [[c]]\n   third [[d]]\n\n\n[[e]]"
    assert [(link.target, link.line) for link in parse_links(body)] == [
        ("a", 3),
        ("b", 4),
        ("c", 4),
        ("d", 5),
        ("e", 8),
    ]


def test_crlf_line_endings() -> None:
    body = "a\r\n\r\n[[x]]\r\nb [[y]]\r\n"
    assert [(link.target, link.line) for link in parse_links(body)] == [("x", 3), ("y", 4)]


def test_autolinks_and_reference_definitions_are_not_links() -> None:
    body = "<https://example.org/[[auto]]>\n\n[ref]: https://example.org/[[def]]\n\n[[real]]"
    assert link_targets(body) == ["real"]


def test_embed_counts_as_link() -> None:
    # Obsidian lists ![[embeds]] as links too (backlinks, graph).
    assert only("![[diagram.png]]").target == "diagram.png"


def test_brackets_around_a_link() -> None:
    assert link_targets("[[[a]]] and [[[[b]]]] and [x][[c]]") == ["a", "b", "c"]


# --- hostile input -------------------------------------------------------------

FAMILIES: dict[str, Callable[[int], str]] = {
    "open brackets": lambda n: "[" * n + "[[end]]",
    "double open": lambda n: "[[" * n,
    "close brackets": lambda n: "[[start]]" + "]" * n,
    "nested": lambda n: "[" * n + "a" + "]" * n,
    "nested double": lambda n: "[[" * n + "a" + "]]" * n,
    "backticks": lambda n: "[[start]]" + "`" * n,
    "unclosed link with bar": lambda n: "[[a|" * n,
    "one bracket short": lambda n: "[[a]" * n,
    "tag openers": lambda n: "<[[" * n,
}


def _best_of_3(small: str, large: str) -> tuple[float, float]:
    best = [float("inf"), float("inf")]
    gc_was_enabled = gc.isenabled()
    gc.disable()  # a collection landing in one run would skew the ratio
    try:
        for _ in range(3):
            for i, body in enumerate((small, large)):
                start = time.process_time()  # this process's CPU time: other processes hogging the CPU do not count
                parse_links(body)
                best[i] = min(best[i], time.process_time() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    return best[0], best[1]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_pathological_input_grows_linearly(family: str) -> None:
    make = FAMILIES[family]
    small, large = make(10_000), make(80_000)
    parse_links("[[warm-up]]")
    # 8x the input may take at most 24x the CPU time (quadratic would be 64x). Runs
    # under 20 ms are timer noise; quadratic behaviour at 80k is far above it.
    # Two tries: a cold cache can spoil one measurement, while quadratic parsing fails both.
    ratios = []
    for _ in range(2):
        t_small, t_large = _best_of_3(small, large)
        if t_large < max(24 * t_small, 0.02):
            return
        ratios.append((t_small, t_large))
    pytest.fail(f"{family}: 8x the input took more than 24x the CPU time: {ratios}")


def test_pathological_input_results() -> None:
    assert link_targets("[" * 1000 + "[[end]]") == ["end"]
    assert parse_links("[[" * 1000) == []
    assert parse_links("[[a|" * 1000) == []
    assert link_targets("[[a]" * 999 + "]") == ["a"]
    assert link_targets("[[" * 100 + "a" + "]]" * 100) == ["a"]


# --- properties ----------------------------------------------------------------

_MARKDOWNISH = st.text(
    alphabet=st.sampled_from(list("[]|#:`<>!\\*_ \n\t-~=aZ0.\r\x00") + ["é", "服"]),
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_MARKDOWNISH, st.text(max_size=300)))
def test_parse_never_raises_and_targets_are_clean(body: str) -> None:
    links = parse_links(body)
    line_count = body.count("\n") + body.count("\r") + 1
    for link in links:
        for part in (link.target, link.vault or "x"):
            assert part and part == part.strip()
            assert not set(part) & set("[]\n\r")
        assert 1 <= link.line <= line_count
    assert len(link_targets(body)) <= len(links)


_PART = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
        blacklist_characters="[]|#:`<>\\&*_~!",
    ),
    min_size=1,
    max_size=20,
).filter(lambda s: s.strip() == s and not s.lower().endswith(".md"))


@settings(max_examples=200, deadline=None)
@given(
    target=_PART,
    vault=st.none() | _PART,
    heading=st.none() | _PART,
    label=st.none() | _PART,
    before=st.integers(min_value=0, max_value=5),
)
def test_written_link_parses_back(
    target: str, vault: str | None, heading: str | None, label: str | None, before: int
) -> None:
    text = "[[" + (f"{vault}:" if vault else "") + target
    text += (f"#{heading}" if heading else "") + (f"|{label}" if label else "") + "]]"
    body = "line\n" * before + f"see {text} and `[[{target}]]`"
    assert parse_links(body) == [Link(target, vault, label, heading, before + 1)]
