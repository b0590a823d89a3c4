"""Git hooks: what each hook does when Git runs it, then the hook it replaced.

Installing am's shims (and chaining the hooks they replace) is ``am.upkeep.hookfiles``.

Vault hooks: ``pre-commit`` refuses staged records that break the format or
carry a credential; ``post-commit``, ``post-merge``, ``post-checkout`` and
``post-rewrite`` bring the cache up to date and print lint warnings. Code
repository hooks: ``post-commit`` and ``post-merge`` warm the staleness cache
of the branch's world and tell the committer which facts the commit made stale
there (see ``am.worlds.stale``); they never write to the vault.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from am.errors import UsageError
from am.upkeep.hookfiles import VAULT_HOOKS, shared_gitdir
from am.upkeep.hookscan import RECORD_TOPS, is_record_file

if TYPE_CHECKING:
    from am.packs.reader import VaultOpener

__all__ = ["post_change", "post_change_paths", "refresh_cache", "run_chained", "run_code_hook", "run_vault_hook"]


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
        return [p for p, _ in store.tree_files(list(RECORD_TOPS), commit=new)]
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
    return sorted({p for p in paths if is_record_file(p)})


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
        from am.git.program.cligit import CliStore

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

                    code = 0 if post_commit_short(light, tops=RECORD_TOPS, is_record_path=is_record_file,
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
