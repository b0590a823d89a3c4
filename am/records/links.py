"""Obsidian-style ``[[wikilinks]]`` found with markdown-it-py; pure, no I/O.

Forms: ``[[id]]``, ``[[id|label]]``, ``[[id#heading]]``, ``[[id#heading|label]]``
and ``[[vault:id]]`` (combinable with ``#`` and ``|``). ``:`` cannot occur in an
Obsidian file name, so ``a:b`` is unambiguous: vault ``a``, id ``b``. A topic kind,
a colon and a space (``[[Tool: 切片查询]]``, the am blog's style) is a local link to
the title that follows.

The body is tokenised by markdown-it so that code spans, fenced and indented
code blocks, HTML blocks and the inside of HTML tags are never links, while
paragraphs, headings, lists, block quotes and table cells are scanned.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

__all__ = ["Link", "link_targets", "parse_links", "obsidian_uri_links", "OBSIDIAN_URI"]


@dataclass(frozen=True)
class Link:
    """One wikilink as written in a body."""

    target: str
    vault: str | None
    label: str | None
    heading: str | None
    line: int


# The inside of a wikilink may not hold a bracket or a newline. Because the
# character class stops at the first bracket, each character is scanned by at
# most one attempted match, which keeps hostile input like "[[a|" * N linear.
_WIKILINK = re.compile(r"\[\[([^\[\]\n]*)\]\]")
_OPEN_RUN = re.compile(r"\[+")
_CLOSE_RUN = re.compile(r"\]+")
# C0/C1 controls, DEL and U+FFFD (what markdown-it makes of NUL) never belong
# in an id or a vault name.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ufffd]")
_TOKEN_TYPE = "wikilink"
# A Markdown link to Obsidian's URI (what Obsidian opens across vaults):
# [label](obsidian://open?vault=NAME&file=topics%2Fproject-alpha)
OBSIDIAN_URI = re.compile(r"\[([^\[\]\n]*)\]\((obsidian://open\?[^()\s]+)\)")


def obsidian_uri_links(text: str) -> list[tuple[str, str | None, str | None]]:
    """Return (target, vault, label) of each Obsidian URI link in text: the file's name, its vault, the label."""
    from urllib.parse import parse_qs

    found = []
    for match in OBSIDIAN_URI.finditer(text):
        query = parse_qs(match.group(2).split("?", 1)[1])
        vault = (query.get("vault") or [""])[0].strip()
        file = (query.get("file") or [""])[0].strip()
        name = file.rsplit("/", 1)[-1]
        if name.lower().endswith(".md"):
            name = name[:-3]
        if not vault or not name or _CONTROL.search(name) or _CONTROL.search(vault) or ":" in vault:
            continue
        found.append((name.strip(), vault, match.group(1).strip() or None))
    return found

_md: MarkdownIt | None = None
# A topic's kinds (am.records.model.TOPIC_KINDS), as a link's "Kind: Title" prefix may name them.
_KINDS = frozenset(("project", "tool", "person", "org", "decision", "session", "concept", "event"))


def _split(inner: str) -> tuple[str, str | None, str | None, str | None] | None:
    """Split the text between ``[[`` and ``]]`` into (target, vault, heading, label)."""
    ref, bar, label_part = inner.partition("|")
    if bar and ref.endswith("\\"):
        # Inside a Markdown table Obsidian writes the alias bar as "\|".
        ref = ref[:-1]
    ref, hash_, heading_part = ref.partition("#")
    target = ref.strip()
    vault: str | None = None
    if ":" in target:
        vault_part, _, rest = target.partition(":")
        if vault_part.strip().casefold() in _KINDS and rest.startswith((" ", "\u3000")):
            # The am blog's "[[Tool: 切片查询]]": a topic's kind and its title, not a vault (a vault link is
            # written without the space: [[vault:id]]). The title resolves as any link's name does.
            target = rest.strip()
        else:
            vault = vault_part.strip()
            target = rest.strip()
            if not vault or ":" in target:
                return None
    if target.lower().endswith(".md"):
        # Obsidian resolves [[note.md]] to the same file as [[note]].
        target = target[:-3].rstrip()
    if not target or _CONTROL.search(target) or (vault and _CONTROL.search(vault)):
        return None
    heading = heading_part.strip() if hash_ else ""
    label = label_part.strip() if bar else ""
    return target, vault, heading or None, label or None


def _append_text(state: StateInline, text: str) -> None:
    """Add literal text to the state's pending text run."""
    append = getattr(state, "append_pending", None)
    if append is not None:  # markdown-it-py >= 4: amortised O(1)
        append(text)
    else:
        state.pending += text


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """Match ``[[...]]`` at the current position and emit a ``wikilink`` token.

    With markdown-it's link and image rules off, no other inline rule reacts
    to ``[`` or ``]``, so runs of brackets that cannot start a wikilink are
    taken here as plain text in one step instead of one character per pass
    through every rule; that keeps bracket floods cheap.
    """
    src, pos, end = state.src, state.pos, state.posMax
    char = src[pos]
    if char == "]":
        run = _CLOSE_RUN.match(src, pos, end)
        if run is None:  # unreachable: src[pos] is "]"
            return False
        if not silent:
            _append_text(state, run.group(0))
        state.pos = run.end()
        return True
    if char != "[":
        return False
    run = _OPEN_RUN.match(src, pos, end)
    if run is None:  # unreachable: src[pos] is "["
        return False
    # The inside of a link holds no "[", so only the last two of a run of
    # "[" can open one.
    start = max(pos, run.end() - 2)
    match = _WIKILINK.match(src, start, end) if start + 2 == run.end() else None
    parts = _split(match.group(1)) if match is not None else None
    if match is None or parts is None:
        if not silent:
            _append_text(state, run.group(0))
        state.pos = run.end()
        return True
    if not silent:
        if start > pos:
            _append_text(state, src[pos:start])
        token = state.push(_TOKEN_TYPE, "", 0)
        token.content = match.group(0)
        token.meta = {"parts": parts, "pos": start}
    state.pos = match.end()
    return True


def _parser() -> MarkdownIt:
    """Return the shared parser, building it on first use."""
    global _md
    if _md is None:
        from markdown_it import MarkdownIt  # ~40 ms: only when a body may hide a link in code or HTML

        md = MarkdownIt("commonmark").enable("table")
        # Only the split between code/HTML and prose matters here, not rendering.
        # markdown-it's own link, image and emphasis rules cost most of the time
        # on bracket-heavy input and do not decide what is code (code spans bind
        # tighter than brackets), so they are off. The price: "[[x]]" written
        # inside a Markdown link's "(destination)" counts as a link.
        md.disable(["link", "image", "emphasis"])
        # First in line, so a bracket is handled without trying every rule.
        md.inline.ruler.before("text", _TOKEN_TYPE, _wikilink_rule)
        _md = md
    return _md


def _line_starts(text: str) -> list[int]:
    """Return the offsets at which each line after the first begins."""
    return [m.end() for m in re.finditer("\n", text)]


# Characters that can put a "[[" inside code, HTML, an escape, an entity or a table cell; with none of
# them (and no indented line or "]:" reference definition) the wikilinks are exactly the regex's matches
# (am/cache/rows.py relies on the same rule; tests hold both equal to the parser).
_MARKDOWN_RISK = re.compile(r"[`<\\&|~\t]|    |\]:")


def _plain_links(body: str) -> list[Link]:
    """Return the wikilinks of a body with nothing that could hide one in code: no parser needed."""
    links = []
    line, seen = 1, 0  # lines counted up to ``seen``: each character is counted once (linear in the body)
    for match in _WIKILINK.finditer(body):
        parts = _split(match.group(1))
        if parts is not None:
            line += body.count("\n", seen, match.start())
            seen = match.start()
            target, vault, heading, label = parts
            links.append(Link(target, vault, label, heading, line))
    return links


def parse_links(body: str) -> list[Link]:
    """Return every wikilink in a Markdown body, in document order."""
    if "[[" not in body and "obsidian://" not in body:
        return []
    if _MARKDOWN_RISK.search(body) is None and "obsidian://" not in body:
        return _plain_links(body)
    links: list[Link] = []
    tokens: list[Token] = _parser().parse(body)
    first_line = 0
    for token in tokens:
        if token.map is not None:
            first_line = token.map[0]
        if token.type != "inline" or not token.children:
            continue
        starts: list[int] | None = None
        for child in token.children:
            if child.type == "text" and "obsidian://" in child.content:
                links += [Link(t, v, label, None, first_line + token.content[:token.content.find("obsidian://")]
                               .count("\n") + 1) for t, v, label in obsidian_uri_links(child.content)]
                continue
            if child.type != _TOKEN_TYPE:
                continue
            if starts is None:
                starts = _line_starts(token.content)
            target, vault, heading, label = child.meta["parts"]
            offset = bisect.bisect_right(starts, child.meta["pos"])
            links.append(Link(target, vault, label, heading, first_line + offset + 1))
    return links


def link_targets(body: str) -> list[str]:
    """Return the distinct link targets of a body as ``vault:id`` or ``id``, in order."""
    seen: dict[str, None] = {}
    for link in parse_links(body):
        key = f"{link.vault}:{link.target}" if link.vault else link.target
        seen.setdefault(key, None)
    return list(seen)
