"""Editing ``.am/vault.yml`` by hand's rules: change one table, keep every other line as it was.

The vault file is the vault's committed settings; a person may have written
comments and keys am does not know. ``with_repo`` rewrites only the ``repos:``
table (code-repo name -> remote URL, DESIGN §2), appending it when absent, and
checks that the result reads back as the old settings plus that one change.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from am.errors import InvalidRecordError
from am.records.frontmatter import format_scalar, load_settings

__all__ = ["repos_of", "with_repo"]

_TOP = re.compile(r"^[^\s#]")


def repos_of(settings: Mapping[str, Any]) -> dict[str, str]:
    """Return the ``repos:`` table of a vault's settings: name -> remote URL ('' when none is known)."""
    table = settings.get("repos")
    if not isinstance(table, dict):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in table.items()}


def with_repo(text: str, name: str, remote: str | None, *, path: str = ".am/vault.yml") -> str:
    """Return the vault file's text with ``repos: {name: remote}`` set (other lines kept byte for byte)."""
    settings = load_settings(text, path=path) if text.strip() else {}
    table = settings.get("repos")
    if table is not None and not isinstance(table, dict):
        raise InvalidRecordError("'repos' must be a mapping of code-repo names to remote URLs", path=path,
                                 field="repos", hint="fix it by hand, then run am repo add again")
    repos = repos_of(settings)
    repos[name] = remote or ""
    block = "repos:\n" + "".join(f"  {k}: {format_scalar(v)}\n" for k, v in sorted(repos.items()))
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"repos:\s*(#.*)?$", line.rstrip("\r\n"))), None)
    if start is None:
        sep = "" if not text or text.endswith("\n") else "\n"
        new = text + sep + block
    else:
        end = start + 1
        while end < len(lines) and not _TOP.match(lines[end]):
            end += 1
        new = "".join(lines[:start]) + block + "".join(lines[end:])
    expected = {**settings, "repos": repos}
    got = load_settings(new, path=path)
    if repos_of(got) != repos or {k: v for k, v in got.items() if k != "repos"} != {
            k: v for k, v in expected.items() if k != "repos"}:
        raise InvalidRecordError("cannot add the repo without changing other settings", path=path, field="repos",
                                 hint=f"add '  {name}: {remote or ''}' under 'repos:' by hand")
    return new
