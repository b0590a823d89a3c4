"""Git hooks' files: am's shims, installed and uninstalled, and the hooks they replaced.

Every installed hook is a one-line shim that runs the *installed* am (the
interpreter and package that ran ``am hooks install``, in isolated mode so the
current folder is never on ``sys.path``) — never code from the vault. A hook
that was already there is moved to ``.git/am/hooks-chained/`` and run after
am's own work (``am.upkeep.hooks.run_chained``); ``am hooks uninstall`` puts it back.
What each hook does when Git runs it is ``am.upkeep.hooks``; below it, this
module imports no other module of ``am.upkeep``.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from am.errors import UsageError

__all__ = [
    "CODE_HOOKS",
    "HEALTH_NOTE",
    "MARKER",
    "SHIM_VERSION",
    "VAULT_HOOKS",
    "HookAction",
    "am_command",
    "hooks_dir",
    "ignore_health_note",
    "install_hooks",
    "render_shim",
    "shared_gitdir",
    "uninstall_hooks",
]

VAULT_HOOKS = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
CODE_HOOKS = ("post-commit", "post-merge")
MARKER = "# am-hook: installed by `am hooks install`; a hook it replaced is kept in .git/am/hooks-chained/"


@dataclass(frozen=True)
class HookAction:
    """What install or uninstall did to one hook file."""

    name: str
    path: str
    action: str  # installed, updated, chained, restored, removed, kept


def am_command(module: str = "am.cli.main") -> list[str]:
    """Return the argv prefix that runs this installation of am, independent of the current folder.

    ``module`` is the entry: ``am.cli.main`` (the command line) or
    ``am.cli.hookrun`` (a vault hook, without the command line's start-up).
    """
    python, package_parent, installed = _installation()
    if installed:
        return [python, "-I", "-m", module]
    # A source checkout: put exactly that folder on the path, nothing else.
    code = f"import sys; sys.path.insert(0, {str(package_parent)!r}); from {module} import main; main()"
    return [python, "-I", "-c", code]


def _installation() -> tuple[str, Path, bool]:
    """Return (this interpreter, the folder holding the am package, whether that folder is site-packages)."""
    import am

    package_parent = Path(am.__file__).resolve().parent.parent
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    return str(Path(sys.executable).absolute()), package_parent, package_parent in site


SHIM_VERSION = 3
HEALTH_NOTE = "am-health.md"


def render_shim(args: Sequence[str]) -> str:
    """Return the text of a hook that runs ``am <args> "$@"``, and survives a moved or rebuilt virtualenv.

    It runs the am that installed it while that interpreter and package are
    there; else the ``am`` on PATH; else it says how to fix it (into
    ``am-health.md`` too, where an Obsidian user sees it) and lets Git go on:
    a hook that cannot run must not hold every commit hostage.
    """
    python, package_parent, _ = _installation()
    # A vault hook runs the entry without click (am/cli/hookrun.py): its start-up is most of a hook's cost.
    light = len(args) == 2 and args[0] == "hook" and args[1] in VAULT_HOOKS
    entry = "hookrun" if light else "main"
    command = " ".join(shlex.quote(w) for w in [*am_command(f"am.cli.{entry}"), *(args[1:] if light else args)])
    fallback = " ".join(shlex.quote(w) for w in ["am", *args])
    name = args[args.index("hook") + 1] if "hook" in args[:-1] else "hook"
    health = "hook" == (args[0] if args else "")  # a vault's hook; a code repository gets no note
    check = shlex.quote(str(package_parent / "am" / "cli" / f"{entry}.py"))
    problem = (f"am: the {name} hook cannot find am (it was installed with {python}, which is gone, and there is "
               "no am on PATH); git goes on unchecked. Fix: install am again (pip install am) and run: "
               "am hooks install")
    return (
        "#!/bin/sh\n"
        f"{MARKER}\n"
        f"# am-shim: {SHIM_VERSION}\n"
        f"if [ -x {shlex.quote(python)} ] && [ -f {check} ]; then\n"
        f"  exec {command} \"$@\"\n"
        "fi\n"
        "if command -v am >/dev/null 2>&1; then\n"
        f"  exec {fallback} \"$@\"\n"
        "fi\n"
        f"echo {shlex.quote(problem)} >&2\n"
        + (f"printf '%s\\n' {shlex.quote('- ' + problem)} >> {HEALTH_NOTE} 2>/dev/null\n" if health else "")
        + "exit 0\n"
    )


def _is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def shared_gitdir(gitdir: Path) -> Path:
    """The git dir every work tree shares (hooks, info/exclude): a linked worktree's ``commondir``, else ``gitdir``."""
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    return Path(os.path.normpath(gitdir / common))  # an absolute commondir replaces gitdir here


def hooks_dir(root: Path) -> tuple[Path, Path]:
    """Return (hooks folder Git runs, am's folder in the shared git dir) for a repository."""
    from am.git import GitStore

    store = GitStore.open(root)
    configured = store.config_value("core.hooksPath")
    if configured:
        hooks = Path(configured).expanduser()
        if not hooks.is_absolute():
            hooks = store.root / hooks
        try:
            hooks.resolve().relative_to(store.root)
        except ValueError:
            pass
        else:
            # Hook files there are versioned content; am neither moves nor writes them.
            raise UsageError(f"core.hooksPath points inside the repository ({configured})",
                             hint="point it outside (or unset it: git config --unset core.hooksPath), "
                                  "then run am hooks install again")
    else:
        hooks = shared_gitdir(store.gitdir) / "hooks"
    return hooks, shared_gitdir(store.gitdir) / "am"


def _check_not_inside(package: Path, root: Path) -> None:
    try:
        package.resolve().relative_to(root.resolve())
    except ValueError:
        return
    raise UsageError(f"the am that would run the hooks lives inside {root}",
                     hint="install am outside the repository (pip install am) and run am hooks install again")


def install_hooks(root: Path, *, names: Sequence[str], args_for: Callable[[str], list[str]]) -> list[HookAction]:
    """Install am's shim for each hook name, chaining any hook already there."""
    import am

    _check_not_inside(Path(am.__file__).parent, root)
    hooks, am_dir = hooks_dir(root)
    chained = am_dir / "hooks-chained"
    hooks.mkdir(parents=True, exist_ok=True)
    actions = []
    for name in names:
        target = hooks / name
        action = "installed"
        if target.exists() or target.is_symlink():
            if _is_ours(target):
                action = "updated"
            else:
                chained.mkdir(parents=True, exist_ok=True)
                keep = chained / name
                n = 1
                while keep.exists():
                    keep = chained / f"{name}.{n}"
                    n += 1
                os.replace(target, keep)
                action = "chained"
        if name in VAULT_HOOKS and args_for(name)[:1] == ["hook"]:
            ignore_health_note(am_dir.parent)  # the note the hooks write warnings to is never committed
        tmp = target.with_name(f".{name}.am-tmp")
        tmp.write_text(render_shim(args_for(name)), encoding="utf-8")
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_IRUSR)
        os.replace(tmp, target)
        actions.append(HookAction(name, str(target), action))
    return actions


def uninstall_hooks(root: Path, *, names: Sequence[str]) -> list[HookAction]:
    """Remove am's shims and put back the hooks they replaced."""
    hooks, am_dir = hooks_dir(root)
    chained = am_dir / "hooks-chained"
    actions = []
    for name in names:
        target = hooks / name
        kept = chained / name
        if target.exists() and not _is_ours(target):
            actions.append(HookAction(name, str(target), "kept"))
            continue
        if target.exists():
            target.unlink()
            action = "removed"
        else:
            action = "absent"
        if kept.exists():
            os.replace(kept, target)
            action = "restored"
        if action != "absent":
            actions.append(HookAction(name, str(target), action))
    return actions


def ignore_health_note(gitdir: Path) -> None:
    """Make Git ignore the health note in this clone (``.git/info/exclude``), if it does not already."""
    exclude = shared_gitdir(gitdir) / "info" / "exclude"  # the one Git reads in every work tree
    line = f"/{HEALTH_NOTE}"
    try:
        current = exclude.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = ""
    if line in current.splitlines():
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    sep = "" if not current or current.endswith("\n") else "\n"
    with open(exclude, "a", encoding="utf-8") as handle:
        handle.write(f"{sep}{line}\n")
