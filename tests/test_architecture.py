"""The arrows point down: each third-party library lives in one module, the library never imports the CLI."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "am"
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@functools.cache  # each test asks about every module: one parse per file and run, not one per test
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


def test_pygit2_only_in_the_git_package() -> None:
    assert {m for m in _users("pygit2") if not m.startswith("am/git/")} == set()


def test_sqlite3_only_in_index() -> None:
    assert _users("sqlite3") <= {"am/cache/index.py", "am/cache/usage.py"}


def test_click_only_in_the_cli() -> None:
    assert {m for m in _users("click") if not m.startswith("am/cli/")} == set()


def test_library_never_imports_the_cli() -> None:
    offenders = {m for m in _users("am.cli") if not m.startswith("am/cli/")}
    assert offenders == set()


def test_confusables_data_only_in_lookalikes() -> None:
    assert _users("confusable_homoglyphs") <= {"am/records/lookalikes.py"}


@pytest.mark.parametrize("library", ["networkx", "jsonschema", "numpy", "simsimd", "confusable_homoglyphs"])
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


# The floors of am/, bottom to top (docs/architecture.md). A module may import only
# floors below its own, or modules of its own package: lazily or under TYPE_CHECKING too.
FLOORS = {
    "am": 0, "errors": 0, "clock": 0,
    "records": 1, "loopback": 1,
    "git": 2,
    "cache": 3, "registry": 3,
    "worlds": 4,
    "packs": 5,
    "writes": 6,
    "upkeep": 7,
    "vault": 8,
    "demo": 9,
    "cli": 11,
}
DOOR = 10  # any other package (mcp, sync, sessions, io, ...): a door above the facade, beside the others


def _unit(module: str) -> str:
    """Return the floor unit of a dotted ``am`` module: its subpackage or top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "am"


def _floor(unit: str) -> int:
    return FLOORS.get(unit, DOOR)


def _arrows() -> list[tuple[str, str]]:
    """Return (importing module, imported am module) for every import of am inside am/."""
    arrows = []
    for path in _modules():
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        module = ".".join(parts)
        for name, _ in _imports(path):
            if name == "am" or name.startswith("am."):
                arrows.append((module, name))
    return arrows


def _wrong_way(arrows: list[tuple[str, str]]) -> list[str]:
    wrong = []
    for module, name in arrows:
        src, dst = _unit(module), _unit(name)
        if src == dst or dst == "am":
            continue
        if _floor(dst) > _floor(src) or (_floor(dst) == _floor(src) and src != dst):
            wrong.append(f"{module} -> {name}")
    return wrong


def test_subpackages_import_only_the_floors_below() -> None:
    assert _wrong_way(_arrows()) == []


def test_the_floor_rule_can_fail() -> None:
    assert _wrong_way([("am.cache.index", "am.vault")]) == ["am.cache.index -> am.vault"]
    assert _wrong_way([("am.mcp.server", "am.sync.run")]) == ["am.mcp.server -> am.sync.run"]
    assert _wrong_way([("am.cache.index", "am.cache.rows"), ("am.vault", "am.packs.slice"),
                       ("am.cli.main", "am.mcp.server")]) == []


def test_every_subpackage_says_its_floor() -> None:
    """Each subpackage's docstring says its role, what it may import and what it must not."""
    missing = []
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        if "May import" not in doc or "Must not import" not in doc:
            missing.append(_rel(init))
    assert missing == []


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(p for p in rel.parts if p != "__init__")


def _import_graph(paths: dict[str, Path]) -> dict[str, set[str]]:
    """Return module -> the am modules it imports, every import statement counted (lazy, TYPE_CHECKING, relative).

    ``from am.x import y`` is an arrow to ``am.x`` and, when ``am.x.y`` is a module, to it as well;
    an import of ``am.x.y.z`` points at the longest name that is a module of the package.
    """
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        arrows: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                names = [source] + [f"{source}.{alias.name}" for alias in node.names]
            for name in names:
                while name and name not in paths:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    arrows.add(name)
        graph[module] = arrows
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module, each sorted (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_no_import_circle_anywhere() -> None:
    """STYLE.md: no circle, not even inside a floor or through lazy and TYPE_CHECKING imports."""
    graph = _import_graph({_module_name(p): p for p in _modules()})
    assert _circles(graph) == []


def test_the_circle_rule_can_fail(tmp_path: Path) -> None:
    (tmp_path / "am" / "p").mkdir(parents=True)
    files = {"am.p.a": "def f():\n    from am.p import b\n", "am.p.b": "from am.p.c import x\n",
             "am.p.c": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from am.p.a import f\n", "am.p.d": "import am.p.c\n"}
    paths = {}
    for name, text in files.items():
        path = tmp_path / (name.replace(".", "/") + ".py")
        path.write_text(text)
        paths[name] = path
    paths["am.p"] = tmp_path / "am" / "p" / "__init__.py"
    paths["am.p"].write_text("")
    assert _circles(_import_graph(paths)) == [["am.p.a", "am.p.b", "am.p.c"]]


def test_every_module_names_the_decision_file_that_explains_it() -> None:
    """Issue 32: each module's docstring names its file of docs/decisions/, and that file is there."""
    decisions = PACKAGE.parent / "docs" / "decisions"
    unnamed, missing = [], []
    for path in _modules():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        named = re.findall(r"docs/decisions/([\w-]+\.md)", doc)
        if not named:
            unnamed.append(_rel(path))
        missing += [f"{_rel(path)}: {name}" for name in named if not (decisions / name).is_file()]
    assert unnamed == [], "name the decision file in these modules' docstrings (docs/decisions/index.md lists them)"
    assert missing == []
