"""`am import` keeps the name rule: a topic whose name another record answers to is refused, nothing written.

A `[[Name]]` link resolves by file name, id, title, alias (am/records/names.py); `am topic add` refuses a
name another record already answers to, or one that looks like it (am/records/lookalikes.py). An import
wrote such topics (the mcp-memory entity "Redis" of an unknown type is `concept-redis`, titled "Redis",
beside the vault's `tool-redis` "Redis"), so `[[Redis]]` became ambiguous. Now the import is refused before
any commit, naming each clashing topic, the record it clashes with and the fix (docs/import.md).
Re-importing the same export (the same ids) still writes nothing and succeeds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_git, subprocess_env

from am.vault import Vault


def _am(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(root), *args],
                          capture_output=True, text=True, env=subprocess_env())


def _memory(path: Path, *entities: tuple[str, str]) -> Path:
    lines = [{"type": "entity", "name": name, "entityType": kind, "observations": [f"{name} is used here."]}
             for name, kind in entities]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _state(root: Path) -> tuple[str, str, str]:
    return (run_git(root, "rev-parse", "HEAD").strip(), run_git(root, "ls-files").strip(),
            run_git(root, "status", "--porcelain", "--untracked-files=all"))


def _setup(vault: Vault) -> None:
    vault.add_topic(title="Redis", kind="tool", id="tool-redis")
    vault.add_topic(title="Postgres", kind="tool", id="tool-postgres", aliases=["PG"])
    vault.add_fact("Alpha caches sessions in [[Redis]].", topics=["tool-redis"])


def test_an_import_whose_topics_take_names_in_use_is_refused_whole(vault: Vault, vault_path: Path,
                                                                    tmp_path: Path) -> None:
    _setup(vault)
    source = _memory(tmp_path / "memory.jsonl", ("Kafka", "software"), ("Redis", "thing"), ("pg", "thing"),
                     ("Rеdis", "software"))  # the last with a Cyrillic е
    before = _state(vault_path)
    for extra in ([], ["--dry-run"]):
        done = _am(vault_path, "import", "mcp-memory", str(source), *extra)
        assert done.returncode == 6, done.stdout + done.stderr
        err = done.stderr
        assert "Traceback" not in err
        assert "concept-redis" in err and "'Redis' is already a name of tool-redis" in err
        assert "concept-pg" in err and "'pg' is already a name of tool-postgres" in err
        # The look-alike (Cyrillic е) is named with the name it looks like.
        assert "topic tool-rdis" in err and "Rеdis" in err and "looks like 'redis'" in err
        assert "kafka" not in err.lower()  # only the clashing topics are named
        assert "nothing was written" in err and "rename it in the source" in err
        assert _state(vault_path) == before


def test_the_same_names_under_the_same_ids_merge(vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    """The fix the error gives: the entity that makes the existing topic's id (`tool-redis`) merges into it."""
    _setup(vault)
    source = _memory(tmp_path / "memory.jsonl", ("Redis", "software"), ("Kafka", "software"))
    done = _am(vault_path, "import", "mcp-memory", str(source), "--format", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["merged"] == 1 and out["made"]["topic"] == 1
    check = _am(vault_path, "check", "--strict")
    assert check.returncode == 0, check.stdout + check.stderr


def test_reimporting_the_vaults_own_export_still_writes_nothing(vault: Vault, vault_path: Path,
                                                                tmp_path: Path) -> None:
    _setup(vault)
    export = tmp_path / "vault.jsonl"
    assert _am(vault_path, "export", "-o", str(export)).returncode == 0
    before = _state(vault_path)
    again = _am(vault_path, "import", "jsonl", str(export), "--format", "json")
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert out["commits"] == [] and out["merged"] == 2
    assert _state(vault_path) == before
    # Into another vault holding the same topics under the same ids: merged, the facts written.
    other = tmp_path / "other"
    run_git(tmp_path, "init", "-q", "-b", "main", str(other))
    with Vault.init(other, name="other", actor="tester") as second:
        second.add_topic(title="Redis", kind="tool", id="tool-redis")
    into = _am(other, "import", "jsonl", str(export), "--format", "json")
    assert into.returncode == 0, into.stderr
    assert json.loads(into.stdout)["made"]["fact"] == 1
