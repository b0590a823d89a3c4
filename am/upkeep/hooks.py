"""Git hooks: install, uninstall, and what each hook does when Git runs it.

Every installed hook is a one-line shim that runs the *installed* am (the
interpreter and package that ran ``am hooks install``, in isolated mode so the
current folder is never on ``sys.path``) — never code from the vault. A hook
that was already there is moved to ``.git/am/hooks-chained/`` and run after
am's own work; ``am hooks uninstall`` puts it back.

Vault hooks: ``pre-commit`` refuses staged records that break the format or
carry a credential; ``post-commit``, ``post-merge``, ``post-checkout`` and
``post-rewrite`` bring the cache up to date and print lint warnings. Code
repository hooks: ``post-commit`` and ``post-merge`` warm the staleness cache
of the branch's world and tell the committer which facts the commit made stale
there (see ``am.worlds.stale``); they never write to the vault.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from am.errors import UsageError
from am.records.ids import RECORD_DIRS

if TYPE_CHECKING:
    from am.packs.reader import VaultOpener

__all__ = [
    "VAULT_HOOKS",
    "CODE_HOOKS",
    "MARKER",
    "HookAction",
    "am_command",
    "render_shim",
    "SHIM_VERSION",
    "install_hooks",
    "uninstall_hooks",
    "run_vault_hook",
    "run_code_hook",
    "run_chained",
    "refresh_cache",
    "shared_gitdir",
]

VAULT_HOOKS = ("pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite")
CODE_HOOKS = ("post-commit", "post-merge")
MARKER = "# am-hook: installed by `am hooks install`; a hook it replaced is kept in .git/am/hooks-chained/"
_RECORD_TOPS = tuple(RECORD_DIRS.values())


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


def _hooks_dir(root: Path) -> tuple[Path, Path]:
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
    hooks, am_dir = _hooks_dir(root)
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
            from am.upkeep.health import ignore_health_note

            ignore_health_note(am_dir.parent)  # the note the hooks write warnings to is never committed
        tmp = target.with_name(f".{name}.am-tmp")
        tmp.write_text(render_shim(args_for(name)), encoding="utf-8")
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH | stat.S_IRUSR)
        os.replace(tmp, target)
        actions.append(HookAction(name, str(target), action))
    return actions


def uninstall_hooks(root: Path, *, names: Sequence[str]) -> list[HookAction]:
    """Remove am's shims and put back the hooks they replaced."""
    hooks, am_dir = _hooks_dir(root)
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


def run_chained(gitdir: Path, name: str, args: Sequence[str], stdin: bytes | None) -> int:
    """Run the hook am replaced (if any) with the same arguments and input; return its exit code."""
    hook = shared_gitdir(gitdir) / "am" / "hooks-chained" / name
    if not hook.is_file() or not os.access(hook, os.X_OK):
        return 0
    proc = subprocess.run([str(hook), *args], input=stdin or b"")
    return proc.returncode


def refresh_cache(vault: Any) -> str | None:
    """Bring the vault's cache up to date, if this am has one; return a warning on failure."""
    opener = getattr(vault, "cache", None)
    if not callable(opener):
        return None
    try:
        # The vault's own handle: a second one in this process would only contend for the cache's lock.
        index = opener()
        if index is not None:
            index.refresh()
    except ImportError:
        return None
    except Exception as err:  # the cache is disposable; a failure must not break a commit
        return f"could not update the cache ({err}); the next am command rebuilds it"
    return None


# ---------------------------------------------------------------- what the vault hooks do


def _is_record_path(path: str) -> bool:
    return path.endswith(".md") and path.split("/", 1)[0] in _RECORD_TOPS and "/." not in "/" + path


def _secret_findings(path: str, data: bytes) -> list[str]:
    """Return descriptions of suspected credentials in a record file, like the am write path sees them."""
    from am.errors import InvalidRecordError
    from am.records.codec import decode_record_bytes, parse_record
    from am.records.secrets import scan_text
    from am.records.writes import scan_record

    try:
        text = decode_record_bytes(data, path=path)
    except InvalidRecordError:
        return []
    try:
        record = parse_record(text, path)
    except InvalidRecordError:
        findings = scan_text(text, field="file")
    else:
        findings = scan_record(record)
    return [f"{path}: {f.describe()}" for f in findings]


def _rev(store: Any, rev: str) -> str | None:
    from am.errors import GitError

    try:
        return str(store.resolve(rev))
    except GitError:
        return None


def _changed_between(store: Any, old: str | None, new: str | None) -> list[str]:
    if new is None:
        return []
    if old is None or set(old) == {"0"}:
        return [p for p, _ in store.tree_files(list(_RECORD_TOPS), commit=new)]
    return [p for p, blob in store.diff_paths(old, new) if blob is not None]


def post_change_paths(store: Any, name: str, args: Sequence[str], stdin: bytes) -> list[str]:
    """Return the record files a post-* hook's change touched (that still exist)."""
    head = store.head()
    paths: list[str] = []
    if name == "post-commit":
        if head is not None:
            paths = [p for p, blob in store.changed_files(head) if blob is not None]
    elif name == "post-merge":
        paths = _changed_between(store, _rev(store, "ORIG_HEAD"), head)
    elif name == "post-checkout":
        if len(args) >= 2:
            paths = _changed_between(store, args[0], args[1])
    elif name == "post-rewrite":
        for line in stdin.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                try:
                    paths += [p for p, blob in store.changed_files(parts[1]) if blob is not None]
                except Exception:
                    continue
    return sorted({p for p in paths if _is_record_path(p)})


def post_change(vault: Any, name: str, args: Sequence[str], stdin: bytes, out: TextIO) -> int:
    """Refresh the cache and print lint warnings for the records a commit, merge or checkout changed."""
    from am.upkeep.check import check_vault
    from am.upkeep.health import note_warnings

    lines: list[str] = []
    problem = refresh_cache(vault)
    if problem:
        lines.append(f"warning: {problem}")
    paths = [p for p in post_change_paths(vault.store, name, args, stdin) if (vault.root / p).is_file()]
    if paths:
        # Lint: the plain-Python rules (no jsonschema import), on the cache refreshed just above.
        report = check_vault(vault, paths=paths, schema=False, cache_fresh=problem is None)
        lines += [issue.describe() for issue in report.issues if issue.severity != "note"]
    for line in lines:
        out.write(f"am: {line}\n")
    head = vault.store.head()
    note_warnings(vault.root, vault.store.gitdir, f"{name} {str(head)[:10] if head else ''}".strip(), lines)
    return 0


def _complete_merge(vault: Any, name: str, args: Sequence[str], stdin: bytes, out: TextIO) -> None:
    """After Git's own merge or rebase: commit the contested copies its driver could not write (am/upkeep/merges.py)."""
    from am.upkeep.merges import complete_merge, complete_rebase, complete_squash

    try:
        if name == "post-rewrite":
            if not args or args[0] != "rebase":  # args may be a tuple (click) or a list
                return
            rows = [line.split() for line in stdin.decode("utf-8", "replace").splitlines()]
            made = complete_rebase(vault, [(row[0], row[1]) for row in rows if len(row) >= 2])
        elif name == "post-merge" and args and args[0] == "1":  # git merge --squash: nothing committed yet
            squashed = [key.removeprefix("GITHEAD_") for key in os.environ if key.startswith("GITHEAD_")]
            staged = complete_squash(vault, squashed)
            if staged:
                out.write(f"am: the squash changed facts on both sides; both versions are kept as contested facts, "
                          f"staged for the squash commit ({len(staged)} files); resolve them with am fact supersede\n")
            return
        else:
            made = complete_merge(vault)
    except UsageError as err:  # a vault of a newer format: nothing written; the cache is still refreshed
        out.write(f"am: {name}: {err.message}; upgrade am to complete Git's merge of its "
                  f"records; this am wrote nothing\n")
        return
    if made:
        out.write(f"am: the merge changed facts on both sides; both versions are kept as contested facts "
                  f"(commit {made[:10]}); resolve them with am fact supersede\n")


def run_vault_hook(name: str, args: Sequence[str], *, cwd: Path, stdin: bytes, out: TextIO,
                   open_vault: VaultOpener) -> int:
    """Run one vault hook in the repository at ``cwd``, then the hook it replaced.

    ``open_vault`` is the facade's opener (``am.vault.Vault.open``), handed down by the door.
    """
    from am.errors import AmError, NotAVaultError

    if name not in VAULT_HOOKS:
        raise UsageError(f"unknown hook {name!r}; am handles: {', '.join(VAULT_HOOKS)}")
    if name in ("pre-commit", "post-commit"):
        # Git read through the git CLI: a hook on every obsidian-git commit does not import pygit2.
        from am.git.cligit import CliStore

        try:
            light = CliStore.open(cwd)
        except NotAVaultError as err:
            out.write(f"am: {err}\n")
            return 0
        code = 0
        try:
            with light:
                if name == "pre-commit":
                    code = _pre_commit(light, cwd, out, open_vault)
                else:
                    from am.upkeep.postcommit import post_commit_short

                    code = 0 if post_commit_short(light, tops=_RECORD_TOPS, is_record_path=_is_record_path,
                                                  out=out) else -1
        except AmError as err:
            out.write(f"am: {name}: {err}\n")
            code = 1 if name == "pre-commit" else -1
        if code >= 0:
            return code or run_chained(light.gitdir, name, args, stdin)
    from am.git import GitStore

    try:
        store = GitStore.open(cwd)
    except NotAVaultError as err:
        out.write(f"am: {err}\n")
        return 0
    try:
        try:
            vault = open_vault(cwd)
        except NotAVaultError:
            vault = None
        if vault is not None:
            with vault:
                if name in ("post-merge", "post-commit", "post-rewrite"):
                    _complete_merge(vault, name, args, stdin, out)
                post_change(vault, name, args, stdin, out)
    except AmError as err:
        out.write(f"am: {name}: {err}\n")
    return run_chained(store.gitdir, name, args, stdin)


def _pre_commit(store: Any, cwd: Path, out: TextIO, open_vault: VaultOpener) -> int:
    """Run the pre-commit check on the index Git hands the hook; a refusal also goes to am-health.md."""
    import io

    from am.upkeep.precommit import pre_commit

    index_file = os.environ.get("GIT_INDEX_FILE")
    if index_file and not os.path.isabs(index_file):
        index_file = str(cwd / index_file)
    allow = os.environ.get("AM_ALLOW_SECRET", "") not in ("", "0")
    said = io.StringIO()
    code = pre_commit(store, index_file=index_file, allow_secrets=allow, out=said, vault_root=cwd,
                      open_vault=open_vault)
    out.write(said.getvalue())
    if code and (cwd / ".am" / "vault.yml").is_file():
        from am.upkeep.health import note_warnings

        note_warnings(store.root, store.gitdir, "pre-commit refused a commit",
                      [ln.strip() for ln in said.getvalue().splitlines() if ln.strip()])
    return code


def run_code_hook(name: str, args: Sequence[str], *, cwd: Path, vault_where: str | None, repo: str,
                  stdin: bytes, out: TextIO, open_vault: VaultOpener) -> int:
    """Run a code-repository hook: warm the staleness cache and say which facts this commit made stale.

    Staleness is derived per world (DESIGN §5.6), so nothing is written to the
    vault: the hook computes the branch's new world (filling the caches a
    slice reads) and compares it with the world before the commit or merge.
    """
    from am.errors import AmError
    from am.git import GitStore
    from am.packs.pack import SliceRequest
    from am.packs.why import stale_in_world

    store = GitStore.open(cwd)
    head = store.head()
    before: str | None = None
    if name == "post-merge":
        before = _rev(store, "ORIG_HEAD")
    elif head is not None:
        parents = store.commit_info(head).parents
        before = parents[0] if parents else None
    try:
        branch: str | None = store.head_ref().removeprefix("refs/heads/")
    except AmError:
        branch = None
    if head is not None:
        try:
            with open_vault(vault_where) as vault:
                now = stale_in_world(vault, SliceRequest(repo=repo, branch=branch, commit=head))
                old = (stale_in_world(vault, SliceRequest(repo=repo, branch=branch, commit=before)).ids()
                       if before is not None else set())
            new = [s for s in now.facts if s.fact.id not in old]
            if new:
                where = f"{repo}@{branch or head[:10]}"
                listed = ", ".join(f"{s.fact.id} ({s.mark.path})" for s in new)
                out.write(f"am: this commit makes {len(new)} fact{'s' * (len(new) != 1)} stale on {where}: {listed}\n")
                _stale_advice(store, [s.fact for s in new], branch, head, out)
        except AmError as err:
            out.write(f"am: {name}: could not check watched paths: {err}\n")
    return run_chained(store.gitdir, name, args, stdin)


def _stale_advice(store: Any, facts: Sequence[Any], branch: str | None, head: str, out: TextIO) -> None:
    """Say how to settle each fact: confirm at this commit only where that keeps it on its branch (DESIGN §5.6)."""
    from am.worlds.checks import home_branch, keeps_branch

    mine = [f.id for f in facts if keeps_branch(store, f.version, f.commit, head)]
    others: dict[str, list[str]] = {}
    for f in facts:
        if f.id not in mine:
            others.setdefault(home_branch(store, f.version, f.commit) or "?", []).append(f.id)
    if mine:
        names, it = ("them", "them") if not others else (", ".join(mine), "it" if len(mine) == 1 else "them")
        out.write(f"am: check {names}, then re-confirm with: am fact confirm ID --commit {head[:10]}\n"
                  f"am: or supersede {it} where the code is now: am fact supersede ID TEXT --reason WHY --here\n")
    here, flag = (branch, branch) if branch else (head[:10], "BRANCH")
    for of, ids in sorted(others.items()):
        one = len(ids) == 1
        it = "it" if one else "them"
        out.write(f"am: {', '.join(ids)} {'is' if one else 'are'} {of}'s: check {it} on {here}; if "
                  f"{'it' if one else 'one'} no longer holds there: am fact supersede ID \"what holds there\" "
                  f"--branch {flag} --reason \"...\" (confirming {it} here would take {it} off {of})\n")
