"""am check warns about two records answering to the same name: `[[Name]]` reaches only one of them.

A link resolves by file name, id, title, alias (am/records/names.py, case-insensitively); am refuses a new
name in use (`am topic add`, `am import`), but a topic written by hand, or by a tool before that rule,
can take one. `am check` warned only about names that look alike (`lookalike-name`), not about the same
name twice. Now it reports `duplicate-name`, a warning, on the later file, naming the other.
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


def _hand_topic(root: Path, rid: str, title: str, aliases: str = "[]", name: str | None = None) -> None:
    (root / "topics" / f"{name or rid}.md").write_text(
        f"---\ntype: topic\nid: {rid}\nkind: concept\ntitle: {title}\naliases: {aliases}\n"
        "created: 2026-12-01T10:00:00+00:00\n---\n", encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "by hand")


def _issues(root: Path, code: str) -> list[dict[str, str]]:
    done = _am(root, "check", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    return [i for i in json.loads(done.stdout)["issues"] if i["code"] == code]


def test_two_records_answering_to_one_name_are_warned_about(vault: Vault, vault_path: Path) -> None:
    vault.add_topic(title="Redis", kind="tool", id="tool-redis", aliases=["Cache"])
    vault.add_topic(title="Li Wei", kind="person", id="person-li-wei")  # its own names twice: no warning
    vault.add_fact("Alpha caches sessions in [[Redis]].", topics=["tool-redis"])
    assert _issues(vault_path, "duplicate-name") == []
    _hand_topic(vault_path, "concept-redis", "redis")  # the same name, another case
    _hand_topic(vault_path, "concept-store", "Store", aliases="[cache]")  # an alias against an alias
    _hand_topic(vault_path, "concept-kv", "KV", name="Tool-Redis")  # a file name against an id
    issues = _issues(vault_path, "duplicate-name")
    assert all(i["severity"] == "warning" for i in issues), issues
    # One warning a pair, on the later file by path, naming the other file and the name.
    pairs = {frozenset({i["path"], i["message"].split(" is also a name of ")[1].split(" ")[0]}): i["message"]
             for i in issues}
    assert len(pairs) == len(issues) == 3, issues
    assert "'redis'" in pairs[frozenset({"topics/concept-redis.md", "topics/tool-redis.md"})].lower()
    assert "'cache'" in pairs[frozenset({"topics/concept-store.md", "topics/tool-redis.md"})].lower()
    assert "'tool-redis'" in pairs[frozenset({"topics/Tool-Redis.md", "topics/tool-redis.md"})].lower()
    assert _issues(vault_path, "lookalike-name") == []  # the same name is not also a look-alike
    strict = _am(vault_path, "check", "--strict")
    assert strict.returncode != 0 and "duplicate-name" in strict.stdout + strict.stderr
