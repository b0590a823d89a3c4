"""The wheel ships every subpackage, the schemas and the demo vault (editable installs hide such gaps)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _config() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]  # type: ignore[no-any-return]


def test_every_subpackage_is_listed() -> None:
    listed = set(_config()["packages"])  # type: ignore[call-overload]
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "am").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


def test_schemas_and_demo_are_shipped() -> None:
    config = _config()
    dirs = config["package-dir"]  # type: ignore[index]
    data = config["package-data"]  # type: ignore[index]
    assert dirs["am._schemas"] == "schemas" and dirs["am._demo"] == "vaults/demo"
    assert "*.json" in data["am._schemas"]
    demo_patterns = data["am._demo"]
    demo = ROOT / "vaults" / "demo"
    for path in demo.rglob("*"):
        if path.is_file():
            rel = path.relative_to(demo)
            assert any(rel.match(p) or (p.startswith("**/") and rel.match(p[3:])) for p in demo_patterns), rel


def test_the_web_view_s_files_are_shipped() -> None:
    patterns = _config()["package-data"]["am.web"]  # type: ignore[index]
    static = ROOT / "am" / "web" / "static"
    files = [p.relative_to(static.parent) for p in static.iterdir() if p.is_file()]
    assert files and all(any(rel.match(p) for p in patterns) for rel in files), files
    from am.web.files import STATIC_FILES

    assert sorted(STATIC_FILES) == sorted(p.name for p in static.iterdir() if p.is_file())
