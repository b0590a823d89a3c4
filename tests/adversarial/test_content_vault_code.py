"""A cloned vault never makes am import or run anything (issue 14).

Before: ``embeddings: "module:factory"`` in a committed ``.am/vault.yml`` was
imported and called by ``am slice --query`` (``http.server:test`` listened on
0.0.0.0). Code now comes only from the user's own machine configuration
(``$AM_EMBEDDINGS`` or ``$AM_HOME/config.yml``), as a ``module:factory`` or as
the name of an entry point (group ``am.embeddings``) of an installed package.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from am.vault import Vault
from tests.conftest import PYTHON, run_git, subprocess_env

PLANTED = textwrap.dedent('''
    """A module that leaves a mark when it is imported and when its factory runs."""
    import os
    from pathlib import Path

    MARK = Path(os.environ["PLANTED_MARK"])
    MARK.write_text(MARK.read_text() + "imported\\n" if MARK.exists() else "imported\\n")


    class Backend:
        name = "planted"

        def search(self, query, *, limit):
            return [("fact-planted", 1.0)]


    def factory():
        MARK.write_text(MARK.read_text() + "called\\n")
        return Backend()
''')


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """Return (a folder holding the planted module and an installed package's metadata, the mark file)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "planted_backend.py").write_text(PLANTED)
    info = site / "planted_backend-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-backend\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[am.embeddings]\nplanted = planted_backend:factory\n")
    return site, tmp_path / "mark.txt"


@pytest.fixture
def cloned(alpha: Vault, vault_path: Path, tmp_path: Path) -> Path:
    """A clone of a vault whose committed .am/vault.yml names the planted module."""
    alpha.add_fact("Alpha answers in 20 ms.", topics=["project-alpha"], id="fact-planted")
    settings = vault_path / ".am/vault.yml"
    settings.write_text(settings.read_text() + 'embeddings: "planted_backend:factory"\n')
    run_git(vault_path, "commit", "-q", "-am", "choose a backend")
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(vault_path), str(clone))
    return clone


def slice_query(vault: Path, site: Path, mark: Path, **env: str) -> dict:
    proc = subprocess.run(
        [PYTHON, "-m", "am.cli.main", "--vault", str(vault), "slice", "--query", "answers", "--format", "json"],
        capture_output=True, text=True, cwd=vault, check=False,
        env=subprocess_env(PYTHONPATH=f"{site}:{subprocess_env()['PYTHONPATH']}", PLANTED_MARK=str(mark), **env))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("machine", ["", "off"])
def test_a_vault_setting_never_imports_code(cloned: Path, planted: tuple[Path, Path], machine: str) -> None:
    """Nothing configured on the machine (the default backend, or none), or the level off: never the vault's."""
    site, mark = planted
    pack = slice_query(cloned, site, mark, AM_EMBEDDINGS=machine)
    assert not mark.exists(), mark.read_text()
    text = json.dumps(pack)
    assert "never loads" in text and "planted_backend:factory" in text
    assert pack["scope"]["retrieval"]["level"] in ("full-text", "vector+full-text")
    note = pack["scope"]["retrieval"]["notes"][0]
    assert note.startswith("vector: off ($AM_EMBEDDINGS)" if machine else ("vector: not installed", "vector: wordllama"))


def test_the_users_environment_chooses_a_backend(cloned: Path, planted: tuple[Path, Path]) -> None:
    site, mark = planted
    text = json.dumps(slice_query(cloned, site, mark, AM_EMBEDDINGS="planted_backend:factory"))
    assert mark.read_text() == "imported\ncalled\n"
    assert '"level": "vector"' in text and "vector: 1 hits" in text


def test_an_entry_point_named_in_am_home(cloned: Path, planted: tuple[Path, Path], am_home: Path) -> None:
    site, mark = planted
    (am_home / "config.yml").write_text("embeddings: planted\n")
    text = json.dumps(slice_query(cloned, site, mark, AM_HOME=str(am_home), AM_EMBEDDINGS=""))
    assert mark.read_text() == "imported\ncalled\n"
    assert '"level": "vector"' in text and "vector: 1 hits" in text


def test_load_backend_ignores_the_vault_in_process(planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from am.packs.retrieval import load_backend

    site, mark = planted
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PLANTED_MARK", str(mark))
    backend, note = load_backend({"embeddings": "planted_backend:factory"})
    assert backend is None and not mark.exists()
    assert note.startswith("vector: off ($AM_EMBEDDINGS); .am/vault.yml names 'planted_backend:factory'")
    monkeypatch.setenv("AM_EMBEDDINGS", "planted")  # the entry point of the installed package
    backend, note = load_backend({})
    assert backend is not None and note == "vector: planted"
    assert backend.search("x", limit=1) == [("fact-planted", 1.0)]


HOOK_NAMES = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction",
              "pre-push", "post-checkout", "post-merge", "pre-auto-gc", "post-rewrite", "post-index-change")


def test_planted_git_config_runs_nothing(alpha: Vault, tmp_path: Path) -> None:
    """A vault's core.hooksPath, core.fsmonitor, filters and textconv: am's writes, sync and repairs run none."""
    root = alpha.root
    mark = tmp_path / "mark"
    mark.mkdir()
    bare = tmp_path / "remote.git"
    run_git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    run_git(root, "push", "-q", str(bare), "HEAD:refs/heads/main")
    other = tmp_path / "other"
    run_git(tmp_path, "clone", "-q", str(bare), str(other))
    (other / "notes.md").write_text("a change on the other side\n")
    run_git(other, "add", "notes.md")
    run_git(other, "-c", "user.name=Other", "-c", "user.email=o@example.com", "commit", "-qm", "other side")
    run_git(other, "push", "-q", "origin", "HEAD:main")

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in HOOK_NAMES:
        (hooks / name).write_text(f"#!/bin/sh\ntouch {mark}/hook-{name}\nexit 0\n")
        (hooks / name).chmod(0o755)
    for key, value in {"core.hooksPath": str(hooks), "core.fsmonitor": f"touch {mark}/fsmonitor; false",
                       "filter.planted.clean": f"touch {mark}/clean; cat",
                       "filter.planted.smudge": f"touch {mark}/smudge; cat",
                       "filter.planted.process": f"touch {mark}/process; false",
                       "diff.planted.textconv": f"touch {mark}/textconv; cat",
                       "remote.origin.url": str(bare),
                       "remote.origin.fetch": "+refs/heads/*:refs/remotes/origin/*",
                       "branch.main.remote": "origin", "branch.main.merge": "refs/heads/main"}.items():
        run_git(root, "config", key, value)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("* filter=planted diff=planted\n")

    def am(*args: str) -> None:
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), *args], capture_output=True,
                              text=True, env=subprocess_env(), timeout=120, check=False)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)

    alpha.close()
    am("fact", "add", "Written under a planted config.", "--topic", "project-alpha", "--id", "fact-planted-1")
    am("fact", "supersede", "fact-planted-1", "Rewritten under a planted config.", "--reason", "test")
    am("sync")
    am("undo", "HEAD~1")
    am("doctor", "--fix")
    am("recover")
    am("index", "rebuild")
    assert sorted(p.name for p in mark.iterdir()) == []
    assert (root / "notes.md").read_text() == "a change on the other side\n"  # the sync did merge
