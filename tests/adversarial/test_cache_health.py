"""A healthy cache is trusted, a damaged one is kept once, and a rebuild happens once.

Issue 14, "the cache is rebuilt when it is healthy": a copied, restored or
rsynced vault gives the cache file a new inode, am then runs ``PRAGMA
quick_check``, and SQLite 3.40 reported a false NULL in every row of the
``members`` table (a WITHOUT ROWID table whose primary key was declared out of
column order): the healthy cache was moved aside and rebuilt, and up to nine
copies piled up in ``.am/cache/aside/``. ``am index rebuild`` on a vault with no
cache built it twice.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from am.cache.index import Index
from am.cli.main import cli
from am.vault import Vault


@pytest.fixture
def seeded(alpha: Vault) -> Vault:
    """The vault with facts about a topic, so ``members`` has rows."""
    for i in range(5):
        alpha.add_fact(f"Alpha fact number {i}.", topics=["project-alpha"], id=f"fact-{i}")
    assert alpha.cache() is not None
    return alpha


def _new_inode(path: Path) -> None:
    """Give a file a new inode with the same bytes, as a copy, restore or rsync does."""
    before = path.stat().st_ino
    tmp = path.with_name(path.name + ".copy")
    shutil.copy2(path, tmp)
    os.replace(tmp, path)
    assert path.stat().st_ino != before


def _aside(vault_path: Path) -> list[str]:
    folder = vault_path / ".am/cache/aside"
    return sorted(p.name for p in folder.glob("index.sqlite.*")) if folder.is_dir() else []


def test_a_copied_healthy_cache_is_trusted(seeded: Vault, vault_path: Path) -> None:
    seeded.close()
    db = vault_path / ".am/cache/index.sqlite"
    _new_inode(db)
    with Vault.open(vault_path) as v:
        index = v.cache()
        assert index is not None
        assert index.rebuilt is None, index.rebuilt
        assert [f.id for f in v.list_facts(topic="project-alpha")] == [f"fact-{i}" for i in range(5)]
    assert _aside(vault_path) == []
    # The check itself passes on the file as built, with SQLite's own full check as the oracle.
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def _damage(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[:16] = b"not a database!!"
    db.write_bytes(bytes(data))


def test_aside_keeps_only_the_latest_damaged_copy(seeded: Vault, vault_path: Path) -> None:
    seeded.close()
    aside = vault_path / ".am/cache/aside"
    aside.mkdir()
    for day in range(1, 9):  # what earlier damage left (nine files were seen at 100k facts: 1.3 GB)
        for suffix in ("", "-wal"):
            (aside / f"index.sqlite.202611{day:02d}-120000.{4000 + day}{suffix}").write_bytes(b"old copy")
    db = vault_path / ".am/cache/index.sqlite"
    _damage(db)
    with Vault.open(vault_path) as v:
        index = v.cache()
        assert index is not None and index.rebuilt is not None
        assert index.lookup("fact-3") is not None
    kept = _aside(vault_path)
    mains = [n for n in kept if not n.endswith(("-wal", "-shm"))]
    assert len(mains) == 1, kept
    assert all(n.startswith(mains[0]) for n in kept), kept
    assert (aside / mains[0]).read_bytes()[:16] == b"not a database!!"


def test_an_older_format_is_replaced_not_kept(seeded: Vault, vault_path: Path) -> None:
    seeded.close()
    db = vault_path / ".am/cache/index.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    conn.commit()
    conn.close()
    with Vault.open(vault_path) as v:
        index = v.cache()
        assert index is not None and index.rebuilt == "older format 1"
    assert _aside(vault_path) == []


def test_index_rebuild_without_a_cache_builds_once(seeded: Vault, vault_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    seeded.close()
    shutil.rmtree(vault_path / ".am/cache")
    builds: list[int] = []
    real = Index._build_fresh

    def counted(self: Index, progress: object) -> int:
        count = real(self, progress)  # type: ignore[arg-type]
        builds.append(count)
        return count

    monkeypatch.setattr(Index, "_build_fresh", counted)
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "index", "rebuild", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert len(builds) == 1, builds
    assert '"files": 6' in result.output  # the topic and five facts
    # With a cache there, the command rebuilds (once).
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "index", "rebuild"])
    assert result.exit_code == 0, result.output
    assert len(builds) == 2
