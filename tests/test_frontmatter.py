"""The strict YAML loader, the canonical dump, and the fast path that must agree with it."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from am.errors import InvalidRecordError
from am.records.frontmatter import (
    LIST_FIELDS,
    MAX_FRONTMATTER_BYTES,
    STRING_FIELDS,
    dump,
    fast_load,
    format_scalar,
    strict_load,
)

ODD_STRINGS = [
    "no", "yes", "No", "off", "on", "y", "n", "true", "False", "null", "Null", "~", "", "1.10", "0123", "1e3",
    "0x1f", "0o17", "1_000", "12:30:00", "2026-09-23", ".inf", "-.inf", ".nan", "- x", "-", "a: b", "a:", "#x",
    "a #b", " leading", "trailing ", "  ", "'quoted'", '"dq"', "[x]", "{x}", "x, y", "&anchor", "*alias",
    "!tag", "|", ">", "%x", "@x", "`x`", "?x", "a\nb", "tab\there", "back\\slash", "\u2028", "\x85", "\ufeffbom",
    "zero\u200bwidth", "rtl\u202eevil", "服务", "Alpha 服务", "日本語のテキスト", "emoji 🧠", "a: b # c", "---", "...",
    "x\ry", "\x7f", "\x00nul",
]


# ---------------------------------------------------------------- hostile YAML

def _refused(text: str) -> InvalidRecordError:
    with pytest.raises(InvalidRecordError) as err:
        strict_load(text, path="topics/x.md", line_offset=1)
    assert "topics/x.md" in str(err.value)
    return err.value


def test_aliases_refused() -> None:
    err = _refused("type: topic\na: &x [1, 2]\nb: *x\n")
    assert "aliases" in str(err) and err.line in (3, 4)


def test_alias_bomb_refused_fast() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    start = time.perf_counter()
    err = _refused("\n".join(lines) + "\n")
    assert time.perf_counter() - start < 1.0
    assert "aliases" in str(err)


@pytest.mark.parametrize("text", [
    "a: !!python/object/apply:os.system ['echo pwned']\n",
    "a: !!python/name:os.system\n",
    "a: !!binary aGVsbG8=\n",
    "a: !!timestamp 2026-09-23\n",
    "a: !custom x\n",
    "a: !!set {x}\n",
])
def test_tags_refused(text: str) -> None:
    err = _refused(text)
    assert "tag" in str(err) and err.line == 2


def test_duplicate_keys_refused_with_line() -> None:
    err = _refused("type: fact\nid: a\nstatus: active\nid: b\n")
    assert "duplicate key 'id'" in str(err) and err.line == 5
    assert str(err).startswith("topics/x.md:5:")


def test_duplicate_keys_in_nested_mapping_refused() -> None:
    _refused("x: {a: 1, a: 2}\n")


def test_huge_frontmatter_refused() -> None:
    err = _refused("title: " + "x" * (MAX_FRONTMATTER_BYTES + 1) + "\n")
    assert "KiB" in str(err)


def test_deep_nesting_refused() -> None:
    _refused("a: " + "[" * 20 + "]" * 20 + "\n")


def test_syntax_error_names_line() -> None:
    err = _refused("type: topic\nid: [unclosed\ntitle: x\n")
    assert err.line is not None and err.line >= 3


def test_non_mapping_refused() -> None:
    _refused("- a\n- b\n")


def test_yaml12_scalars() -> None:
    meta = strict_load("a: no\nb: 1.10\nc: yes\nd: 0123\ne: true\nf: null\ng: 12:30\nh: 2026-09-23\n")
    assert meta == {"a": "no", "b": 1.1, "c": "yes", "d": 123, "e": True, "f": None, "g": "12:30", "h": "2026-09-23"}


def test_string_fields_keep_their_text() -> None:
    meta = strict_load("commit: 0123456\nversion: 1.10\ntitle: no\nrepo: null\ntopics: [1, yes, 0x1]\n")
    assert meta == {"commit": "0123456", "version": "1.10", "title": "no", "repo": None, "topics": ["1", "yes", "0x1"]}


# ---------------------------------------------------------------- canonical form

@pytest.mark.parametrize("value", ODD_STRINGS)
def test_odd_strings_survive_dump_and_both_loaders(value: str) -> None:
    mapping = {"title": value, "x_extra": value, "tags": [value, "b"]}
    text = dump(mapping)
    assert strict_load(text) == mapping
    fast = fast_load(text)
    assert fast is None or fast == mapping
    # Other YAML 1.1 readers (Obsidian, PyYAML's default) see the same strings.
    assert yaml.safe_load(text) == mapping


def test_dump_is_one_key_a_line() -> None:
    text = dump({"type": "fact", "id": "f-1", "topics": ["a", "b"], "pinned": True, "n": 3, "created": "2026-09-23"},
                timestamp_fields=frozenset({"created"}))
    assert text == "type: fact\nid: f-1\ntopics: [a, b]\npinned: true\nn: 3\ncreated: 2026-09-23\n"
    assert fast_load(text) == {"type": "fact", "id": "f-1", "topics": ["a", "b"], "pinned": True, "n": 3,
                               "created": "2026-09-23"}


def test_fast_path_declines_what_it_does_not_know() -> None:
    assert fast_load("a:\n  - x\n") is None
    assert fast_load("a: |\n  text\n") is None
    assert fast_load("a: 'single'\n") is None
    assert fast_load("a: &x 1\n") is None
    assert fast_load("a: 1\na: 2\n") is None
    assert fast_load("# comment\na: 1\n") is None


def test_format_scalar_specials() -> None:
    assert format_scalar(None) == "null"
    assert format_scalar(True) == "true"
    assert format_scalar(1.5) == "1.5"
    assert format_scalar(float("inf")) == ".inf"
    assert format_scalar("null") == '"null"'
    assert format_scalar("a\nb") == '"a\\nb"'
    assert format_scalar("\u202e") == '"\\u202e"'


_KEY = st.from_regex(r"\A[a-z][a-z0-9_]{0,12}\Z").filter(lambda k: k not in STRING_FIELDS | LIST_FIELDS)
_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False), st.text(max_size=40), st.sampled_from(ODD_STRINGS),
)
_STRING_FIELD_VALUE = st.one_of(st.text(max_size=40), st.sampled_from(ODD_STRINGS))


@st.composite
def _mappings(draw: st.DrawFn) -> dict[str, object]:
    mapping: dict[str, object] = {}
    for key in draw(st.lists(st.sampled_from(sorted(STRING_FIELDS)), max_size=6, unique=True)):
        mapping[key] = draw(_STRING_FIELD_VALUE)
    for key in draw(st.lists(st.sampled_from(sorted(LIST_FIELDS)), max_size=3, unique=True)):
        mapping[key] = draw(st.lists(_STRING_FIELD_VALUE, max_size=4))
    for key in draw(st.lists(_KEY, max_size=4, unique=True)):
        if key not in mapping:
            mapping[key] = draw(st.one_of(_SCALAR, st.lists(_SCALAR, max_size=4)))
    return mapping


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping=_mappings())
@example(mapping={"title": "a:b", "tags": ["a:b", "x]"]})
@example(mapping={"reason": "a,b", "tags": ["a,b", "[", "{"]})
def test_fast_and_strict_loaders_agree_on_every_dump(mapping: dict[str, object]) -> None:
    text = dump(mapping)
    strict = strict_load(text)
    assert _same(strict, mapping), (text, strict)
    fast = fast_load(text)
    if fast is not None:
        assert _same(fast, strict), (text, fast, strict)
    assert dump(strict) == text


@pytest.mark.stress
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mapping=_mappings())
def test_fast_and_strict_loaders_agree_on_every_dump_at_length(mapping: dict[str, object]) -> None:
    """The same property at the count it ran at before the default suite took 500 (-m stress)."""
    test_fast_and_strict_loaders_agree_on_every_dump.hypothesis.inner_test(mapping=mapping)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(max_size=200))
@example(text="A:0")
@example(text="a: 1\nb:2\n")
@example(text="a:  x\n")
def test_loaders_never_crash_and_fast_never_disagrees(text: str) -> None:
    try:
        strict = strict_load(text)
    except InvalidRecordError:
        strict = None
    try:
        fast = fast_load(text)
    except InvalidRecordError:
        fast = None
    if fast is not None:
        assert strict is not None and _same(fast, strict), (text, fast, strict)


# ---------------------------------------------------------------- without PyYAML: the resolver and am's own files

def _pyyaml_core_tag(text: str) -> str:
    """What the strict loader's resolver (a PyYAML resolver built from the same table) says."""
    from am.records.frontmatter import _loader_class

    return str(_loader_class()("").resolve(yaml.ScalarNode, text, (True, False)))


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(st.text(max_size=12), st.sampled_from(ODD_STRINGS),
                      st.from_regex(r"\A[-+.0-9eE_xoinfatulsINFATULS~]{0,8}\Z")))
@example(text="\n")
@example(text="0o")
@example(text="1\n")
def test_plain_scalars_resolve_as_pyyaml_resolves_them(text: str) -> None:
    from am.records.frontmatter import _resolve_plain

    assert _resolve_plain(text) == _pyyaml_core_tag(text), repr(text)


@pytest.mark.stress
@settings(max_examples=1500, deadline=None)
@given(text=st.one_of(st.text(max_size=12), st.sampled_from(ODD_STRINGS),
                      st.from_regex(r"\A[-+.0-9eE_xoinfatulsINFATULS~]{0,8}\Z")))
def test_plain_scalars_resolve_as_pyyaml_resolves_them_at_length(text: str) -> None:
    """The same property at the count it ran at before the default suite took 500 (-m stress)."""
    test_plain_scalars_resolve_as_pyyaml_resolves_them.hypothesis.inner_test(text=text)


_NAME = st.from_regex(r"\A[a-z0-9][a-z0-9-]{0,20}\Z")
# Paths as they come (control and line-separator characters aside: PyYAML's own dump folds those).
_PATH_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=60)
_PATH = st.one_of(_PATH_TEXT.filter(bool), st.builds(lambda p: "/" + p, _PATH_TEXT),
                  st.sampled_from(["/tmp/x y/demo", "/a: b", "/a #b", "C:\\x", "~/x", "/服务/数据", "/x/" + "y" * 120]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vaults=st.dictionaries(_NAME, _PATH, max_size=4), repos=st.dictionaries(_NAME, _PATH, max_size=4))
@example(vaults={"true": "/a", "null": "/b", "1": "/c"}, repos={})
@example(vaults={}, repos={"0": "0E0", "1e5": "0o17"})  # text in YAML 1.1, numbers in 1.2 core
def test_registry_fast_path_agrees_with_the_strict_loader(vaults: dict[str, str], repos: dict[str, str],
                                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    from am.records.frontmatter import fast_load_tables
    from am.registry import Registry

    registry = Registry(tmp_path_factory.mktemp("reg") / "registry.yml", dict(vaults), dict(repos))
    registry._save()
    text = registry.path.read_text(encoding="utf-8")
    strict = strict_load(text)
    fast = fast_load_tables(text)
    if fast is not None:
        assert _same(fast, strict), (text, fast, strict)
    loaded = Registry.load(registry.path.parent)
    assert (loaded.vaults, loaded.repos) == (vaults, repos)


def test_what_am_writes_to_the_registry_takes_the_fast_path() -> None:
    from am.records.frontmatter import fast_load_tables

    text = yaml.safe_dump({"vaults": {"demo": "/tmp/x y/demo", "work": "/home/me/" + "long/" * 30},
                           "repos": {}}, allow_unicode=True, sort_keys=True, width=1 << 30)
    assert fast_load_tables(text) == {"repos": {}, "vaults": {"demo": "/tmp/x y/demo",
                                                              "work": "/home/me/" + "long/" * 30}}
    assert fast_load_tables("repos:\nvaults:\n  a: /b\n") == {"repos": None, "vaults": {"a": "/b"}}


@pytest.mark.parametrize("text", [
    "vaults:\n  a: /x\n  a: /y\n",            # duplicate key
    "vaults:\n  a: /x\nvaults:\n  b: /y\n",    # duplicate table
    "vaults:\n  a: &p /x\n  b: *p\n",         # anchors and aliases
    "vaults:\n  a: !!python/name:os.system\n",
    "vaults:\n  a: '/x'\n",                    # quoted: am never writes it, the strict loader reads it
    "vaults:\n    a: /x\n",                    # other indentation
    "vaults: {}\n  a: /x\n",
    "vaults:\n  a: /x # comment\n",
    "vaults:\r\n  a: /x\r\n",
    "\ufeffvaults:\n  a: /x\n",
    "# comment\nvaults:\n  a: /x\n",
    "vaults:\n  a: 12\n",                      # not a string
    "vaults:\n  true: /x\n",                   # a key that is not a string
    "vaults:\n  a:\n",
    "  a: /x\n",
])
def test_registry_fast_path_declines_what_it_does_not_know(text: str) -> None:
    from am.records.frontmatter import fast_load_tables

    assert fast_load_tables(text) is None


@pytest.mark.parametrize("text,message", [
    ("vaults:\n  a: /x\n  a: /y\n", "duplicate key 'a'"),
    ("vaults:\n  a: &p /x\n  b: *p\n", "aliases"),
    ("vaults:\n  a: !!python/name:os.system\n", "tag"),
    ("vaults:\n  a: /" + "x" * (MAX_FRONTMATTER_BYTES + 1) + "\n", "KiB"),
])
def test_hostile_registry_refused(text: str, message: str, tmp_path: Path) -> None:
    from am.registry import Registry

    (tmp_path / "registry.yml").write_text(text, encoding="utf-8")
    with pytest.raises(InvalidRecordError) as err:
        Registry.load(tmp_path)
    assert message in str(err.value) and "registry.yml" in str(err.value)


@pytest.mark.parametrize("text,expected", [
    ("name: demo\nformat: 1\n", {"name": "demo", "format": 1}),
    ("\ufeffname: demo\nformat: 1\n", {"name": "demo", "format": 1}),
    ("name: demo\r\nformat: 1\r\n", {"name": "demo", "format": 1}),
    ("---\nname: 'demo'  # quoted\nformat: 1\n", {"name": "demo", "format": 1}),
    ("name: no\nformat: 1.10\n", {"name": "no", "format": 1.1}),
])
def test_load_settings_equals_the_strict_loader(text: str, expected: dict[str, object]) -> None:
    from am.records.frontmatter import load_settings

    assert load_settings(text) == expected
    assert strict_load(text.lstrip("\ufeff").replace("\r\n", "\n")) == expected


@pytest.mark.parametrize("text,message", [
    ("name: a\nname: b\n", "duplicate key 'name'"),
    ("name: &n a\nother: *n\n", "aliases"),
    ("name: !!python/object/apply:os.system ['x']\n", "tag"),
    ("name: " + "x" * (MAX_FRONTMATTER_BYTES + 1) + "\n", "KiB"),
])
def test_load_settings_refuses_hostile_input(text: str, message: str) -> None:
    from am.records.frontmatter import load_settings

    with pytest.raises(InvalidRecordError) as err:
        load_settings(text, path=".am/vault.yml")
    assert message in str(err.value) and ".am/vault.yml" in str(err.value)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=120))
@example(text="name: x\nname: y\n")
def test_load_settings_never_disagrees_with_the_strict_loader(text: str) -> None:
    from am.records.frontmatter import load_settings

    try:
        strict: object = strict_load(text)
    except InvalidRecordError:
        strict = None
    try:
        settled: object = load_settings(text)
    except InvalidRecordError:
        settled = None
    assert _same(settled, strict), (text, settled, strict)


@pytest.mark.parametrize("text", ["0E0", "1e5", "+1E-3", "0o17", "no", "null", "12"])
def test_nested_values_read_back_as_the_text_they_were(text: str) -> None:
    """Nested values (hand-written files) are dumped for the strict YAML 1.2 core loader too, not just YAML 1.1."""
    from am.records.frontmatter import dump

    mapping = {"extra": {"a": text, "b": [text, "x"]}}
    assert strict_load(dump(mapping)) == mapping
