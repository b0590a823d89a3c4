"""Docs stay in step with the code: the CLI reference, examples in help, format pages."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest

from am.cli.main import cli
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


def _am_commands(text: str) -> list[list[str]]:
    """Every `am ...` command in a page: code-block lines and inline code, split at shell operators."""
    snippets: list[str] = []
    in_block = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_block = not in_block
        elif in_block:
            snippets.append(line.strip().removeprefix("$ "))
        else:
            snippets += re.findall(r"`(am [^`]+)`", line)
    commands: list[list[str]] = []
    for snippet in snippets:
        try:
            tokens = shlex.split(snippet.replace("\\\n", " "), comments=True)
        except ValueError:
            tokens = snippet.split()
        current: list[str] | None = None
        for token in tokens:
            if token in ("|", "&&", "||", ";", "&"):
                current = None
            elif current is not None:
                current.append(token)
            elif token == "am" or token.endswith("/bin/am"):
                current = []
                commands.append(current)
    return commands


def _unknown_names(argv: list[str]) -> list[str]:
    """Subcommands and --options in argv that the command line does not have."""
    chain: list[click.Command] = [cli]
    problems: list[str] = []
    skip = positional = False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=")[0]
        if re.fullmatch(r"--[a-z][a-z0-9-]*", name):
            param = next((p for c in reversed(chain) for p in c.params if name in p.opts + p.secondary_opts), None)
            if param is None:
                problems.append(f"{name} is not an option of am {' '.join(str(c.name) for c in chain[1:])}")
            elif "=" not in token and not getattr(param, "is_flag", False) and not getattr(param, "count", False):
                skip = True
        elif token.startswith("-"):
            continue
        elif isinstance(chain[-1], click.Group) and not positional:
            sub = chain[-1].commands.get(token)
            if sub is not None:
                chain.append(sub)
            elif re.fullmatch(r"[a-z][a-z-]+", token):
                problems.append(f"no command {token!r} in am {' '.join(str(c.name) for c in chain[1:])}")
                break
            else:
                break
        else:
            positional = True
    return problems


def test_doc_command_lines_name_real_commands_and_options() -> None:
    # docs/cli.md is the help itself (test_cli_reference_matches_help); every other page's
    # `am ...` lines must name commands and options the command line has.
    pages = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name != "cli.md")]
    drift = [
        f"{page.relative_to(ROOT)}: am {' '.join(argv)}: {problem}"
        for page in pages
        for argv in _am_commands(page.read_text(encoding="utf-8"))
        for problem in _unknown_names(argv)
    ]
    assert not drift, "\n".join(drift)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_links_to_a_heading_name_one_that_exists() -> None:
    """`[worlds](worlds.md#staleness-per-world-derived)` named no heading (it is '...-derived-design-56')."""
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    anchors = {}
    for page in pages:
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
        anchors[page.resolve()] = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}
    broken = []
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#\s]*\.md)?#([^)\s]+)\)", page.read_text(encoding="utf-8")):
            linked = (page.parent / target).resolve() if target else page.resolve()
            if linked in anchors and anchor not in anchors[linked]:
                broken.append(f"{page.relative_to(ROOT)}: {target}#{anchor}")
    assert broken == []
