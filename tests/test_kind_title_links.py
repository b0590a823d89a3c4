"""The am blog's link style `[[Tool: 切片查询]]` is a local link to the topic of that title (issue 41)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from am.records.links import _KINDS, parse_links
from am.records.model import TOPIC_KINDS
from tests.conftest import subprocess_env

PYTHON = sys.executable


def test_kind_and_title_is_a_local_link_and_a_vault_link_has_no_space() -> None:
    assert _KINDS == frozenset(TOPIC_KINDS)
    found = [(link.target, link.vault) for link in parse_links("[[Tool: 切片查询]] [[tool:x]] [[team:y]] [[Decision: 限流]]")]
    assert found == [("切片查询", None), ("x", "tool"), ("y", "team"), ("限流", None)]


def test_check_strict_resolves_it_to_the_topic_titled_so(tmp_path: Path, am_home: Path) -> None:
    vault = tmp_path / "v"
    env = subprocess_env(AM_HOME=str(am_home))

    def am(*args: str, code: int = 0) -> str:
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(vault), *args], capture_output=True,
                              text=True, env=env, check=False)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc.stdout + proc.stderr

    subprocess.run([PYTHON, "-m", "am.cli.main", "init", str(vault)], check=True, capture_output=True, env=env)
    am("topic", "add", "tool-slice-query", "--title", "切片查询", "--kind", "tool")
    am("fact", "add", "[[Tool: 切片查询]] 默认三级降级。", "--topic", "tool-slice-query")
    assert "0 errors, 0 warnings" in am("check", "--strict")
    am("fact", "add", "[[Tool: 不存在]] 也降级。", "--topic", "tool-slice-query")
    out = json.loads(am("check", "--strict", "--format", "json", code=5))
    assert "不存在" in json.dumps(out, ensure_ascii=False) and "Tool" not in json.dumps(out["issues"])
