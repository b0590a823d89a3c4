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


def _prose(text: str) -> str:
    """A page without its code blocks and inline code, where a link is an example, not a link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def test_links_to_a_page_name_one_that_exists() -> None:
    """A link into docs/decisions/ (or to any page) names a file that is there: the split of the one-page
    decisions file moved every section, and a link to a file that is not there is not checked for its heading
    above."""
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)\s]*)?\)", _prose(page.read_text(encoding="utf-8")))
        if not re.match(r"[a-z]+:", target) and not (page.parent / target).is_file()
    ]
    assert broken == []


DECISIONS = ROOT / "docs" / "decisions"


def test_every_decision_file_is_in_the_index() -> None:
    index = (DECISIONS / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| \[\w+\]\((\w+\.md)\) \|", index, flags=re.MULTILINE))
    files = {p.name for p in DECISIONS.glob("*.md")} - {"index.md"}
    assert listed == files


def test_the_index_names_the_decision_file_of_every_package_and_top_module() -> None:
    """docs/decisions/index.md, "Where is the decision behind module X": each subpackage of am/ and each module
    directly in am/ (but __init__.py) is named there, next to a link to its decision file."""
    index = (DECISIONS / "index.md").read_text(encoding="utf-8")
    section = index.split("## Where is the decision behind module X", 1)[1].split("\n## ", 1)[0]
    am = ROOT / "am"
    names = [f"`am/{p.name}/`" for p in am.iterdir() if (p / "__init__.py").is_file()]
    names += [f"`am/{p.name}`" for p in am.glob("*.py") if p.name != "__init__.py"]
    assert [n for n in sorted(names) if n not in section] == []


def test_mentions_of_a_decision_file_name_one_that_exists() -> None:
    """A mention of a file of docs/decisions/ in code, tests, benchmarks, pages and pyproject.toml names a file
    that is there; and nothing still sends a reader to the old one-page decisions file, now a pointer to
    docs/decisions/index.md."""
    files = [ROOT / "pyproject.toml", ROOT / "README.md"]
    for folder in ("am", "tests", "bench", "docs"):
        files += sorted(p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".toml"))
    missing, old = [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        missing += [f"{path.relative_to(ROOT)}: {m}" for m in re.findall(r"docs/decisions/[\w-]+\.md", text)
                    if not (ROOT / m).is_file()]
        where = path.relative_to(ROOT)
        if where.parent == Path("docs/decisions") or where == Path("docs", "decisions" + ".md"):
            continue
        old += [str(where)] * len(re.findall(r"(?<![\w-])decisions\.md\b", text))
    assert missing == []
    assert old == [], "these still point at the one-page decisions file: point them at a file of docs/decisions/"
