"""Hook health and the vault's health note: what `am doctor` says about hooks, and warnings people can see.

``hook_findings`` reports a vault's hooks that are missing (a fresh clone has
none), not am's, or broken (the interpreter or package the shim names is
gone, or the file is not executable). ``note_warnings`` writes warnings that
a post-commit hook would print to a stderr nobody reads (obsidian-git commits
on a timer) into ``am-health.md`` at the vault's root: a note Obsidian shows,
ignored by Git through ``.git/info/exclude`` (never committed, never a record).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from am.upkeep.hookfiles import (
    HEALTH_NOTE,
    MARKER,
    SHIM_VERSION,
    VAULT_HOOKS,
    hooks_dir,
    ignore_health_note,
    install_hooks,
)

__all__ = ["HookFinding", "hook_findings", "note_warnings", "reinstall_hooks"]

_KEEP_LINES = 200
_SHIM_LINE = re.compile(r"^# am-shim: (\d+)$", re.MULTILINE)
_RUN_LINE = re.compile(r"^(?:  )?exec (.+?) \"\$@\"$", re.MULTILINE)


@dataclass(frozen=True)
class HookFinding:
    """One problem with one installed (or missing) hook."""

    kind: str  # hook-missing, hook-foreign, hook-broken, hook-old
    path: str
    message: str


def _hooks_folder(root: Path) -> Path:
    return hooks_dir(root)[0]


def hook_findings(root: Path, *, names: Sequence[str] = VAULT_HOOKS) -> list[HookFinding]:
    """Return what is wrong with a vault's hooks; change nothing."""
    try:
        folder = _hooks_folder(root)
    except Exception as err:  # noqa: BLE001 - e.g. core.hooksPath inside the repository
        return [HookFinding("hook-broken", str(root), f"{err}")]
    fix = "install them with: am hooks install"
    out: list[HookFinding] = []
    for name in names:
        path = folder / name
        if not path.exists():
            out.append(HookFinding("hook-missing", str(path), f"no {name} hook: hand commits go unchecked; {fix}"))
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            out.append(HookFinding("hook-broken", str(path), f"cannot read it ({err}); {fix}"))
            continue
        if MARKER not in text:
            out.append(HookFinding("hook-foreign", str(path),
                                   f"{name} is not am's hook; {fix} (the hook there is kept and run after am's)"))
            continue
        if not os.access(path, os.X_OK):
            out.append(HookFinding("hook-broken", str(path), f"{name} is not executable; {fix}"))
            continue
        problem = _shim_problem(text)
        if problem:
            out.append(HookFinding("hook-broken", str(path), f"{problem}; {fix}"))
            continue
        if _shim_is_old(text):
            out.append(HookFinding("hook-old", str(path), f"{name} is an older am hook: it works, but starts the "
                                   f"whole command line on every commit; {fix}"))
    return out


def _shim_is_old(text: str) -> bool:
    """Return whether a shim is older than this am's: a lower ``am-shim`` version, or none at all on a
    shim that runs a pinned interpreter (those came before versions; the portable ``am hook`` copy has none)."""
    version = _SHIM_LINE.search(text)
    if version is not None:
        return int(version.group(1)) < SHIM_VERSION
    runs = _RUN_LINE.findall(text)
    return bool(runs) and shlex.split(runs[0])[0] != "am"


def _shim_problem(text: str) -> str | None:
    """Return why a shim cannot run the am it names (None when it can, or falls back to am on PATH)."""
    import shutil

    version = _SHIM_LINE.search(text)
    runs = _RUN_LINE.findall(text)
    if not runs:
        return "the hook runs nothing"
    words = shlex.split(runs[0])
    first = words[0]
    if first == "am" or os.path.isfile(first) and os.access(first, os.X_OK):
        if version is None:
            return None if first == "am" or Path(first).exists() else f"{first} is gone"
        return None
    if version is not None and shutil.which("am"):
        return f"{first} is gone (the hook falls back to the am on PATH)"
    return f"{first} is gone, so the hook cannot run am"


def note_warnings(root: Path, gitdir: Path, source: str, lines: Sequence[str]) -> None:
    """Put warnings at the top of the vault's ``am-health.md`` (newest first, the last 200 lines kept)."""
    if not lines:
        return
    ignore_health_note(gitdir)
    path = root / HEALTH_NOTE
    try:
        old = path.read_text(encoding="utf-8").split("\n")
    except (FileNotFoundError, UnicodeDecodeError):
        old = []
    head = "# am health"
    rest = [ln for ln in old if ln != head and not ln.startswith("Warnings am's Git hooks")]
    while rest and not rest[0].strip():
        rest.pop(0)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    block = [f"## {stamp} {source}", *(f"- {ln}" for ln in lines), ""]
    text = [head, "", "Warnings am's Git hooks printed where you may not see them (newest first); "
            "`am check` lists what is still wrong.", "", *block, *rest]
    tmp = path.with_name(f".{HEALTH_NOTE}.tmp")
    tmp.write_text("\n".join(text[:_KEEP_LINES]).rstrip("\n") + "\n", encoding="utf-8")
    os.replace(tmp, path)


def reinstall_hooks(root: Path) -> list[str]:
    """Install am's vault hooks again (what `am doctor --fix` does about hook findings); return what was done."""
    actions = install_hooks(root, names=VAULT_HOOKS, args_for=lambda name: ["hook", name])
    return [f"{a.action} hook {a.name} ({a.path})" for a in actions]
