"""Every frontmatter key am writes reads back, and one it cannot write is refused before anything is written.

`am import` (am's own jsonl export, whose records keep every key as it was) wrote unknown keys as they were:
`!x: v`, `&a: v`, `[k]: v`, ` lead: v`, a key holding U+2028 or nothing at all. Those files did not parse
afterwards (18 of 30 records unreadable) while the import said it made them. The canonical renderer
(am/records/frontmatter.py ``dump``) now writes a key that is not a plain name as YAML reads it back (quoted
when it must be), and refuses the two kinds of key no one-line YAML key can hold (longer than 1,024
characters as written, or not text: a lone surrogate), naming the key; the import checks every new record
against that rule first and refuses, naming the source entry and the key, with nothing written
(docs/import.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git, subprocess_env
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from am.errors import InvalidRecordError
from am.records.codec import parse_record, render_record, render_update
from am.records.model import Fact, Topic, replace
from am.vault import Vault

HOSTILE_KEYS = [
    "!x", "&a", "*r", "[k]", "{m}", " lead", "trail ", "a\u2028b", "a\u2029b", "k\x85", "", " ", "k: v", "k:",
    "#c", "a #b", "- d", "-", "?q", "? q", "|p", ">f", "%t", "@at", "`b", "x,y", "'s", '"d', "a\"b", "a\\b",
    "a\nb", "a\r\nb", "tab\tk", "null", "~", "true", "no", "1", "0x1f", "1e3", "2026-01-01", "<<", "=", "é",
    "\ufeffbom", "zero\u200bwidth", "rtl\u202eevil", "\x00", "\x7f", "---", "...", "due date", "a:b", "k" * 1024,
]
# Lone surrogates too (JSON's "\ud800" gives one): am must refuse those, not crash.
_ANY_CHAR = st.one_of(st.characters(), st.characters(categories=["Cs"]))


def _surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, dict):
        return any(_surrogate(k) or _surrogate(v) for k, v in value.items())
    return isinstance(value, list) and any(_surrogate(v) for v in value)


def _fact(**extra: Any) -> Fact:
    return Fact(id="fact-k", topics=("project-x",), body="A fact.\n", created="2026-11-30T10:00:00+00:00",
                extra=extra)


def _round_trip(record: Fact | Topic) -> None:
    """Render the record; it must parse back to itself, or the renderer must refuse naming the key."""
    path = f"{record.type}s/{record.id}.md" if record.type == "topic" else f"facts/2026/11/30/{record.id}.md"
    try:
        text = render_record(record)
    except InvalidRecordError as err:
        assert err.field in record.extra, err
        key = err.field
        assert len(key) > 1000 or _surrogate(key) or _surrogate(record.extra[key]) or "nested" in err.message \
            or "reads as text" in err.message, err  # a fact's "aliases: false": another type's text field
        return
    text.encode("utf-8")  # what the writer does with it
    assert parse_record(text, path=path) == record, text
    # A changed record rendered over that file keeps every key too (the path that keeps a person's form).
    changed = replace(record, body="Changed.\n")
    assert parse_record(render_update(text, changed, path=path), path=path) == changed


@pytest.mark.parametrize("key", HOSTILE_KEYS, ids=range(len(HOSTILE_KEYS)))
def test_a_hostile_key_reads_back(key: str) -> None:
    _round_trip(_fact(**{key: "v", "after": 1}))
    _round_trip(_fact(nested={key: "v", "k": [key]}))


def test_a_key_no_yaml_line_can_hold_is_refused_naming_it() -> None:
    for key in ("k" * 1025, "\ud800", "a\udc00b"):
        with pytest.raises(InvalidRecordError) as err:
            render_record(_fact(**{key: "v"}))
        assert err.value.field == key
    with pytest.raises(InvalidRecordError) as err:
        render_record(_fact(deep=[[[[[[[[1]]]]]]]]))  # deeper than the strict loader reads
    assert err.value.field == "deep" and "nested" in err.value.message
    with pytest.raises(InvalidRecordError) as err:
        render_record(_fact(nested={"\ud800": 1}))
    assert err.value.field == "nested"


def test_a_hand_written_quoted_key_keeps_its_place_when_am_changes_the_file() -> None:
    text = ('---\ntype: fact\nid: fact-k\ntopics: [project-x]\nstatus: active\nconfidence: medium\nprovenance: human\n"a\\"b": 1\n\'it\'\'s\': 2\n"x\\u2028y": 3\n'
            "created: 2026-11-30T10:00:00+00:00\n---\nA fact.\n")
    record = parse_record(text, path="facts/2026/11/30/fact-k.md")
    assert record.extra == {'a"b': 1, "it's": 2, "x\u2028y": 3}
    changed = replace(record, body="Changed.\n", extra={**record.extra, "it's": 5})
    after = render_update(text, changed, path="facts/2026/11/30/fact-k.md")
    assert parse_record(after, path="facts/2026/11/30/fact-k.md") == changed
    assert after.count("a\\\"b") == 1 and after.index('"a\\"b": 1') < after.index("it")


_keys = st.one_of(st.sampled_from(HOSTILE_KEYS), st.text(_ANY_CHAR, max_size=12),
                  st.text(st.sampled_from(" \t\n\r:#-?[]{},&*!|>'\"%@`\\\u2028\x85\ufeff\u200bax"), max_size=8))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(_ANY_CHAR, max_size=12))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(_keys, inner, max_size=3)), max_leaves=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.dictionaries(_keys, _values, max_size=4))
@example(extra={"!x": "v", "": 1, " lead": [1], "a\u2028b": {"[k]": "x"}})
@example(extra={"aliases": False})  # a topic's text field on a fact: refused by name, not read back as 'false'
def test_every_key_and_value_rendered_reads_back(extra: dict[str, Any]) -> None:
    known = {"type", "id", "topics", "status", "confidence", "provenance", "created", "body", "pinned", "tags",
             "repo", "version", "commit", "until_commit", "axis", "valid_from", "valid_until", "supersedes",
             "superseded_by", "reason", "paths"}
    _round_trip(_fact(**{k: v for k, v in extra.items() if k not in known}))


# ---------------------------------------------------------------- the import, end to end

def _am(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args],
                          capture_output=True, text=True, env=subprocess_env(), check=False)


def _line(n: int, key: str) -> str:
    return json.dumps({"meta": {"type": "fact", "id": f"fact-h{n}", "topics": ["project-x"], "status": "active",
                                "confidence": "medium", "provenance": "import:test",
                                "created": "2026-11-30T10:00:00+00:00", key: "v"}, "body": f"Fact {n}.\n"}) + "\n"


def test_import_writes_hostile_keys_that_read_back(vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    vault.add_topic(title="X", kind="project", id="project-x")
    keys = [k for k in HOSTILE_KEYS if k not in ("", " ")] + ["", "nested"]
    source = tmp_path / "src.jsonl"
    source.write_text("".join(_line(n, k) for n, k in enumerate(keys)), encoding="utf-8")
    done = _am(vault_path, "import", "jsonl", str(source), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["made"]["fact"] == len(keys)
    check = _am(vault_path, "check", "--format", "json")
    assert "parse" not in check.stdout, check.stdout
    for n, key in enumerate(keys):
        path = next(vault_path.glob(f"facts/*/*/*/fact-h{n}.md"))
        assert parse_record(path.read_text(encoding="utf-8"), path=str(path)).extra == {key: "v"}


def test_import_refuses_a_key_it_cannot_write_naming_the_entry(vault: Vault, vault_path: Path,
                                                                tmp_path: Path) -> None:
    vault.add_topic(title="X", kind="project", id="project-x")
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    source = tmp_path / "src.jsonl"
    source.write_text(_line(0, "fine key") + _line(1, "k" * 2000), encoding="utf-8")
    for extra in ((), ("--dry-run",)):
        done = _am(vault_path, "import", "jsonl", str(source), *extra)
        assert done.returncode == 5, done.stderr
        assert "src.jsonl:2" in done.stderr and "fact-h1" in done.stderr and "k" * 40 in done.stderr, done.stderr
        assert "nothing was written" in done.stderr and "rename" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head
    assert not list(vault_path.glob("facts/*/*/*/fact-h*.md"))
