"""The arrows point down: each third-party library lives in one module, the library never imports the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "am"
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> list[tuple[str, bool]]:
    """Return (imported module, at module level) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    top_level = {id(node) for node in tree.body}
    # Imports under `if TYPE_CHECKING:` or try/except at module level still count as module level.
    for node in tree.body:
        if isinstance(node, (ast.If, ast.Try)):
            top_level |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, id(node) in top_level))
    return found


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def _users(library: str) -> set[str]:
    return {_rel(p) for p in _modules()
            if any(name == library or name.startswith(library + ".") for name, _ in _imports(p))}


def test_pygit2_only_in_gitstore() -> None:
    assert {m for m in _users("pygit2") if not m.startswith("am/git/")} == set()


def test_sqlite3_only_in_index() -> None:
    assert _users("sqlite3") <= {"am/cache/index.py"}


def test_click_only_in_the_cli() -> None:
    assert {m for m in _users("click") if not m.startswith("am/cli/")} == set()


def test_library_never_imports_the_cli() -> None:
    offenders = {m for m in _users("am.cli") if not m.startswith("am/cli/")}
    assert offenders == set()


@pytest.mark.parametrize("library", ["networkx", "jsonschema"])
def test_heavy_libraries_are_imported_lazily(library: str) -> None:
    eager = {_rel(p) for p in _modules() for name, top in _imports(p)
             if top and (name == library or name.startswith(library + "."))}
    assert eager == set(), f"{library} imported at module level in {sorted(eager)}"


def test_no_module_over_the_line_limit() -> None:
    """STYLE.md: split a module by noun before it passes ~600 lines."""
    sizes = {_rel(p): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}
    over = {m: n for m, n in sizes.items() if n > MAX_LINES}
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"


def test_every_module_uses_future_annotations() -> None:
    missing = [_rel(p) for p in _modules()
               if p.read_text(encoding="utf-8").strip() and "from __future__ import annotations" not in p.read_text()
               and p.name != "__init__.py"]
    assert missing == []


def test_the_architecture_test_can_fail(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import pygit2\ndef f():\n    import networkx\n")
    assert _imports(sample) == [("pygit2", True), ("networkx", False)]
