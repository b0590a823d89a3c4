"""`am import` keeps the name rule: a topic the source defines whose name another record answers to is refused.

A `[[Name]]` link resolves by file name, id, title, alias (am/records/names.py); `am topic add` refuses a
name another record already answers to, or one that looks like it (am/records/lookalikes.py). An import
wrote such topics (the mcp-memory entity "Redis" of an unknown type is `concept-redis`, titled "Redis",
beside the vault's `tool-redis` "Redis"), so `[[Redis]]` became ambiguous. Such a topic is refused alone,
left aside naming the record it clashes with and the fix (`--map NAME=ID`), with what hangs on it; the
rest of the import is written (issue 38.2; it was refused whole before). A topic the source only names
(a link or relation target it does not define) is the vault's topic of that name (tests/test_io_populated.py).
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


def test_a_defined_topic_whose_name_is_in_use_is_refused_alone(vault: Vault, vault_path: Path,
                                                               tmp_path: Path) -> None:
    _setup(vault)
    source = _memory(tmp_path / "memory.jsonl", ("Kafka", "software"), ("Redis", "thing"), ("pg", "thing"),
                     ("Rеdis", "software"))  # the last with a Cyrillic е
    before = _state(vault_path)
    dry = _am(vault_path, "import", "mcp-memory", str(source), "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert _state(vault_path) == before
    done = _am(vault_path, "import", "mcp-memory", str(source), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    for out in (json.loads(dry.stdout), json.loads(done.stdout)):
        assert out["made"] == {"topic": 1, "fact": 1, "relation": 0}  # Kafka and its observation
        reasons = "\n".join(a["reason"] for a in out["left_aside"])
        assert "topic concept-redis refused" in reasons and "'Redis' is already a name of tool-redis" in reasons
        assert "topic concept-pg refused" in reasons and "'pg' is already a name of tool-postgres" in reasons
        # The look-alike (Cyrillic е) is named with the name it looks like.
        assert "topic tool-rdis refused" in reasons and "Rеdis" in reasons and "looks like 'redis'" in reasons
        assert "--map 'Redis=ID'" in reasons and "rename it in the source" in reasons
        assert "kafka" not in reasons.lower()  # only the clashing topics (and their facts) are left aside
        assert sum("its topic" in a["reason"] for a in out["left_aside"]) == 3
    assert vault.get_topic("tool-kafka").title == "Kafka"
    check = _am(vault_path, "check", "--strict")
    assert check.returncode == 0, check.stdout + check.stderr


def test_map_sends_a_defined_topic_to_the_vaults(vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    _setup(vault)
    source = _memory(tmp_path / "memory.jsonl", ("Redis", "thing"), ("pg", "thing"))
    done = _am(vault_path, "import", "mcp-memory", str(source), "--map", "redis=tool-redis",
               "--map", "PG=tool-postgres", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["made"] == {"topic": 0, "fact": 2, "relation": 0} and out["left_aside"] == [] and out["merged"] == 2
    said = {f.body.strip(): f.topics for f in vault.list_facts()}
    assert said["Redis is used here."] == ("tool-redis",) and said["pg is used here."] == ("tool-postgres",)
    bad = _am(vault_path, "import", "mcp-memory", str(source), "--map", "Redis=tool-nope")
    assert bad.returncode != 0 and "the vault has no topic tool-nope" in bad.stderr and "Traceback" not in bad.stderr
    assert _am(vault_path, "import", "mcp-memory", str(source), "--map", "Redis").returncode != 0


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
