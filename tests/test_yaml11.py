"""am's shortcut for "would a YAML 1.1 reader read this plain scalar as a string?" equals PyYAML's resolver."""

from __future__ import annotations

import yaml
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from am.records.frontmatter import _yaml11_plain_is_str

_STR = "tag:yaml.org,2002:str"


def pyyaml_says_str(text: str) -> bool:
    return bool(yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False)) == _STR)


def test_the_first_characters_pyyaml_dispatches_on_are_the_ones_am_defers_to_it() -> None:
    first = {k for k in yaml.resolver.Resolver.yaml_implicit_resolvers if k}
    words_first = set("yYnNtTfFoO~")
    assert first - words_first == set("-+.0123456789<=!&*")
    assert None not in yaml.resolver.Resolver.yaml_implicit_resolvers  # no resolver that matches any start


WORDS = ["yes", "Yes", "YES", "no", "NO", "true", "True", "off", "On", "null", "Null", "~", "", "y", "n", "Y",
         "nope", "Nothing", "tRUE", "ofF", "0x1F", "1_000", "1.5e3", ".inf", "-.Inf", "+12", "2026-11-29",
         "2026-11-29 10:00:00", "<<", "=", "0o17", "190:20:30", "1:20", "-", ".", "Off-by-one", "Yesterday"]


def test_known_words_and_numbers() -> None:
    for text in WORDS:
        assert _yaml11_plain_is_str(text) == pyyaml_says_str(text), text


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=12), st.from_regex(r"[-+.0-9yYnNtTfFoO~<=!&*][0-9a-zA-Z_.:+-]{0,10}", fullmatch=True)))
def test_equal_to_pyyaml_on_any_text(text: str) -> None:
    assert _yaml11_plain_is_str(text) == pyyaml_says_str(text)


@pytest.mark.stress
@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.text(max_size=12), st.from_regex(r"[-+.0-9yYnNtTfFoO~<=!&*][0-9a-zA-Z_.:+-]{0,10}", fullmatch=True)))
def test_equal_to_pyyaml_on_any_text_at_length(text: str) -> None:
    """The same property at the count it ran at before the default suite took 500 (-m stress)."""
    test_equal_to_pyyaml_on_any_text.hypothesis.inner_test(text)
