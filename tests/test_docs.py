"""Docs stay in step with the code: the CLI reference, examples in help, format pages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from am.cli.reference import iter_commands, render_reference

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_matches_help() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == render_reference(), "docs/cli.md is stale: run python -m am.cli.reference > docs/cli.md"


@pytest.mark.parametrize("path,command", iter_commands(), ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_command_has_an_example(path: tuple[str, ...], command: object) -> None:
    help_text = getattr(command, "help", "") or ""
    assert "Example:" in help_text, f"am {' '.join(path)} has no 'Example:' in its help"


@pytest.mark.parametrize("kind", ["topic", "fact", "relation"])
def test_format_page_covers_schema(kind: str) -> None:
    schema = json.loads((ROOT / "schemas" / f"{kind}.json").read_text(encoding="utf-8"))
    page = (ROOT / "docs" / "format" / f"{kind}.md").read_text(encoding="utf-8")
    missing = [key for key in schema["properties"] if f"`{key}`" not in page]
    assert not missing, f"docs/format/{kind}.md does not describe: {', '.join(missing)}"
    if "enum" in json.dumps(schema):
        for key, prop in schema["properties"].items():
            for value in prop.get("enum", []):
                assert f"`{value}`" in page, f"docs/format/{kind}.md does not list {key} value {value!r}"
