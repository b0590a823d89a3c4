"""Start-up of the read commands: what a process imports, and the lazy command table behind it.

Every command is a new process (PERF.md "Start-up"), so a read on a fresh cache
must not import what it does not use: PyYAML (am's own files have a fast path),
pygit2, networkx, jsonschema, markdown-it, OpenSSL's hashlib, or the modules of
other commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from am.cli import main as cli_main
from am.cli.main import cli
from tests.conftest import REPO_ROOT, subprocess_env

# Never needed by a read on a fresh cache; each costs milliseconds to import.
HEAVY = ("yaml", "pygit2", "networkx", "jsonschema", "markdown_it", "rich", "hashlib", "secrets", "tempfile",
         "importlib.metadata", "concurrent.futures", "am.records.links", "am.packs.retrieval",
         "mcp", "mcp_types", "pydantic", "anyio", "starlette", "am.mcp")

_PROBE = """
import io, json, sys
from am.cli.main import main
sys.argv = ['am', *json.loads(sys.argv[1])]
out, sys.stdout = sys.stdout, io.StringIO()
try:
    main()
except SystemExit as done:
    code = done.code
printed, sys.stdout = sys.stdout.getvalue(), out
print(json.dumps({'code': code, 'out': printed, 'modules': sorted(sys.modules)}))
"""


def _probe(*args: str, **env: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], check=False, capture_output=True, text=True,
                          env=subprocess_env(**env), cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, (args, done.stderr)
    return result


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo vault, with its cache built once (the reads below find it fresh)."""
    from am.demo import materialise_demo

    folder = tmp_path_factory.mktemp("startup")
    root = folder / "demo"
    # A module fixture runs before the per-test $AM_HOME: the demo registers its code repository.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AM_HOME", str(folder / "am-home"))
        materialise_demo(root)
        done = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), "index", "rebuild"],
                              check=False, capture_output=True, text=True, env=subprocess_env(), cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    return root


READS = [
    ("slice", "--repo", "project-alpha", "--branch", "main"),
    ("slice", "--repo", "project-alpha", "--branch", "main", "--format", "json"),
    ("search", "rate limit"),
    ("fact", "show", "f-20260923-1210-8d2e41"),
    ("fact", "list", "--topic", "project-alpha"),
    ("topic", "show", "project-alpha"),
    ("topic", "list"),
]


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_reads_on_a_fresh_cache_import_nothing_heavy(demo: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    # A registry written by am (a named vault) is read by the fast path too.
    home = tmp_path / "home"
    from am.registry import Registry

    Registry.load(home).add_vault("demo", demo)
    Registry.load(home).add_repo("elsewhere", tmp_path)
    result = _probe("--vault", "demo", *args, AM_HOME=str(home))
    assert result["out"].strip()
    loaded = set(result["modules"])
    assert {m for m in HEAVY if m in loaded} == set(), args
    # Only the module of the command that runs is imported.
    others = {m for m in loaded if m.startswith("am.cli.")} - {"am.cli.main", "am.cli.context"}
    assert len(others) == 1, others


def test_a_hand_edited_registry_still_goes_through_the_strict_loader(demo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "registry.yml").write_text(f"vaults:\n  demo: '{demo}'\n", encoding="utf-8")  # quoted: not am's form
    result = _probe("--vault", "demo", "topic", "list", AM_HOME=str(home))
    assert "project-alpha" in result["out"] and "yaml" in result["modules"]
    (home / "registry.yml").write_text(f"vaults:\n  demo: {demo}\n  demo: /elsewhere\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", "demo", "topic", "list"],
                          check=False, capture_output=True, text=True, env=subprocess_env(AM_HOME=str(home)), cwd=REPO_ROOT)
    assert done.returncode != 0 and "duplicate key 'demo'" in done.stderr and "Traceback" not in done.stderr


def test_a_hand_edited_vault_file_still_goes_through_the_strict_loader(demo: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(demo, copy)
    settings = copy / ".am" / "vault.yml"
    settings.write_text("# my vault\nname: 'renamed'\nformat: 1\n", encoding="utf-8")
    result = _probe("--vault", str(copy), "slice", "--repo", "project-alpha", "--branch", "main")
    assert "`renamed`" in result["out"] and "yaml" in result["modules"]
    settings.write_text("name: a\nname: b\nformat: 1\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(copy), "topic", "list"],
                          check=False, capture_output=True, text=True, env=subprocess_env(), cwd=REPO_ROOT)
    assert done.returncode != 0 and "duplicate key 'name'" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------ the lazy command table


def _everything() -> dict[str, click.Command]:
    """Every command as a full import of the command modules registers it (later modules win)."""
    table: dict[str, click.Command] = {}
    for name in cli_main._LazyGroup._module_names():
        table.update((c.name, c) for c in cli_main._module_commands(name) if c.name)
    return table


def test_the_table_of_homes_names_where_each_command_is_defined() -> None:
    everything = _everything()
    for name, home in cli_main._HOMES.items():
        assert name in everything, f"{name} is in _HOMES but no module defines it"
        assert {c.name: c for c in cli_main._module_commands(home)}.get(name) is everything[name], (name, home)


def test_a_command_missing_from_the_table_is_still_found(monkeypatch: pytest.MonkeyPatch) -> None:
    group = cli_main._LazyGroup(name="probe")
    monkeypatch.setattr(cli_main, "_HOMES", {})
    ctx = click.Context(group)
    assert group.get_command(ctx, "slice") is _everything()["slice"]
    assert group.get_command(ctx, "no-such-command") is None


def test_listing_and_help_show_every_command() -> None:
    assert set(cli.commands) == set(_everything())
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == {name for name, command in _everything().items() if not command.hidden}


def test_a_typo_still_gets_suggestions() -> None:
    result = CliRunner().invoke(cli, ["slcie"])
    assert result.exit_code == 2 and "No such command 'slcie'" in result.output and "slice" in result.output


def test_main_returns_the_exit_code_of_an_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(tmp_path), "topic", "list"],
                          check=False, capture_output=True, text=True, env=subprocess_env(), cwd=REPO_ROOT)
    assert done.returncode == 3 and done.stderr.startswith("Error: ") and "Traceback" not in done.stderr
