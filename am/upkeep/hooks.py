"""Git hooks: install, uninstall, and what each hook does when Git runs it.

Every installed hook is a one-line shim that runs the *installed* am (the
interpreter and package that ran ``am hooks install``, in isolated mode so the
current folder is never on ``sys.path``) — never code from the vault. A hook
that was already there is moved to ``.git/am/hooks-chained/`` and run after
am's own work; ``am hooks uninstall`` puts it back.

Vault hooks: ``pre-commit`` refuses staged records that break the format or
carry a credential; ``post-commit``, ``post-merge``, ``post-checkout`` and
``post-rewrite`` bring the cache up to date and print lint warnings. Code
repository hooks: ``post-commit`` and ``post-merge`` mark the facts that watch
the changed paths ``pending-review`` (see ``am.worlds.stale``).
"""

from __future__ import annotations

import functools
import os
import shlex
import stat
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
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


def am_command() -> list[str]:
    """Return the argv prefix that runs this installation of am, independent of the current folder."""
    python, package_parent, installed = _installation()
    if installed:
        return [python, "-I", "-m", "am.cli.main"]
    # A source checkout: put exactly that folder on the path, nothing else.
    code = f"import sys; sys.path.insert(0, {str(package_parent)!r}); from am.cli.main import main; main()"
    return [python, "-I", "-c", code]


def _installation() -> tuple[str, Path, bool]:
    """Return (this interpreter, the folder holding the am package, whether that folder is site-packages)."""
    import am

    package_parent = Path(am.__file__).resolve().parent.parent
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    return str(Path(sys.executable).absolute()), package_parent, package_parent in site


SHIM_VERSION = 2
HEALTH_NOTE = "am-health.md"


def render_shim(args: Sequence[str]) -> str:
    """Return the text of a hook that runs ``am <args> "$@"``, and survives a moved or rebuilt virtualenv.

    It runs the am that installed it while that interpreter and package are
    there; else the ``am`` on PATH; else it says how to fix it (into
    ``am-health.md`` too, where an Obsidian user sees it) and lets Git go on:
    a hook that cannot run must not hold every commit hostage.
    """
    python, package_parent, _ = _installation()
    command = " ".join(shlex.quote(w) for w in [*am_command(), *args])
    fallback = " ".join(shlex.quote(w) for w in ["am", *args])
    name = args[args.index("hook") + 1] if "hook" in args[:-1] else "hook"
    health = "hook" == (args[0] if args else "")  # a vault's hook; a code repository gets no note
    check = shlex.quote(str(package_parent / "am" / "cli" / "main.py"))
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


def _hooks_dir(root: Path) -> tuple[Path, Path]:
    """Return (hooks folder Git runs, am's folder in the git dir) for a repository."""
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
        hooks = store.gitdir / "hooks"
    return hooks, store.gitdir / "am"


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
    hook = gitdir / "am" / "hooks-chained" / name
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
    from am.records.model import Fact, Relation, Topic
    from am.records.codec import decode_record_bytes, parse_record
    from am.records.secrets import scan_fields, scan_text

    try:
        text = decode_record_bytes(data, path=path)
    except InvalidRecordError:
        return []
    try:
        record = parse_record(text, path)
    except InvalidRecordError:
        findings = scan_text(text, field="file")
    else:
        fields: dict[str, object] = {"body": record.body}
        if isinstance(record, Topic):
            fields.update(title=record.title, aliases=list(record.aliases))
        if isinstance(record, (Fact, Relation)) and record.reason:
            fields["reason"] = record.reason
        fields.update(record.extra)
        findings = scan_fields(fields)
    return [f"{path}: {f.describe()}" for f in findings]


def _is_note_path(path: str) -> bool:
    return path.endswith(".md") and not _is_record_path(path) and "/." not in "/" + path


def pre_commit(store: Any, *, index_file: str | None, allow_secrets: bool, out: TextIO,
               vault_root: Path | None = None, open_vault: VaultOpener | None = None) -> int:
    """Check the staged record files; return 1 (refuse the commit) on errors or suspected secrets.

    Notes (Markdown without am frontmatter) pass anywhere. A commit that
    removes or renames a record other records still point at is refused, with
    the command that does it properly.
    """
    from am.records.names import Names, name_key
    from am.upkeep.check import check_texts, name_other

    all_staged = store.staged_entries(index_file)
    staged = {p: oid for p, oid in all_staged.items() if _is_record_path(p)}
    head = dict(store.tree_files(list(_RECORD_TOPS)))
    changed = sorted(p for p, oid in staged.items() if head.get(p) != oid)
    deleted = sorted(p for p in head if p not in staged)
    if not changed and not deleted:
        return 0
    changed_set = set(changed)
    others: dict[str, str] = {}
    names = Names()
    for p, oid in staged.items():
        if p not in changed_set:
            name_other(p, functools.partial(store.read_object, oid), others, names)

    def load_other(rid: str) -> Any:
        from am.records.codec import decode_record_bytes, parse_record

        path = others[rid]
        try:
            return parse_record(decode_record_bytes(store.read_object(staged[path]), path=path), path)
        except Exception:
            return None

    blobs = {p: store.read_object(staged[p]) for p in changed}
    notes = [p for p in all_staged if _is_note_path(p)]
    report = check_texts(((p, blobs[p]) for p in changed), other_ids=others, load_other=load_other,
                         names=names, notes=notes)
    refused = [i.describe() for i in report.errors]
    if not allow_secrets:
        for p in changed:
            refused += [f"error: {line} [secret]" for line in _secret_findings(p, blobs[p])]
    now_ids = set(others) | {_id_of(p, blobs[p]) for p in changed}
    gone: dict[str, str] = {}  # id -> the path HEAD had it at
    gone_names: dict[str, str] = {}  # what links called it (file name, title, aliases) -> id
    for p in deleted + [p for p in changed if p in head]:
        rid = _id_of(p, store.read_object(head[p]))
        if rid and rid not in now_ids:
            gone[rid] = p
            gone_names.update((n, rid) for n in _names_of(p, rid, store.read_object(head[p])))
    for n in list(gone_names):
        if names.resolve(n) is not None or any(n == name_key(_id_of(p, blobs[p]) or "") for p in changed):
            del gone_names[n]  # another file answers to that name now
    for p in deleted:
        if _id_of(p, store.read_object(head[p])) not in gone:
            continue  # moved: the same id lives on in another file
        out.write(f"am: warning: {p} is deleted; am never deletes a record (expire it instead), "
                  "but Git history keeps it\n")
    if gone:
        refused += _dangling_after(gone, gone_names, report, staged, changed_set, store, vault_root, open_vault)
    if refused:
        # Warnings ride along with a refusal; on success post-commit prints them once.
        for issue in report.warnings:
            out.write(f"am: {issue.describe()}\n")
        out.write("am: commit refused; the staged records break the vault's format:\n")
        for line in dict.fromkeys(refused):
            out.write(f"  {line}\n")
        out.write("fix those files and `git add` them again. A secret that is not one: "
                  "AM_ALLOW_SECRET=1 git commit ...\n")
        return 1
    return 0


def _id_of(path: str, data: bytes) -> str | None:
    """Return the id of a record file's bytes (by its id-shaped file name for facts and relations), or None."""
    from am.records.ids import is_valid_id

    stem = PurePosixPath(path).stem
    if is_valid_id(stem) and not path.startswith("topics/"):
        return stem
    from am.records.codec import decode_record_bytes, parse_meta, split_frontmatter

    try:
        text = decode_record_bytes(data, path=path)
        front, _, eol = split_frontmatter(text, path=path)
        rid = parse_meta(front, eol, path=path).get("id")
    except Exception:  # a broken or plain file: not a record that could be pointed at
        return None
    return rid if isinstance(rid, str) else None


def _fix_for(rid: str, where: str) -> str:
    if where.startswith("topics/"):
        return (f"put {where} back (git checkout HEAD -- '{where}') and rename it with: "
                f"am topic rename {rid} NEW-ID")
    return f"put {where} back (git checkout HEAD -- '{where}'); am never deletes a record: expire it instead"


def _names_of(path: str, rid: str, data: bytes) -> set[str]:
    """Return the name keys links may use for a record (file name, id, title, aliases)."""
    from am.records.names import name_key

    found = {name_key(PurePosixPath(path).stem), name_key(rid)}
    try:
        from am.records.codec import decode_record_bytes, parse_record
        from am.records.model import Topic

        record = parse_record(decode_record_bytes(data, path=path), path)
    except Exception:  # noqa: BLE001 - a broken file: its file name and id are all there is
        return found
    if isinstance(record, Topic):
        found |= {name_key(record.title), *(name_key(a) for a in record.aliases)}
    return found


def _gone_id(ref: str, gone: dict[str, str], gone_names: dict[str, str]) -> str | None:
    """Return the removed id a reference names (by id, or by a name it was known by), or None."""
    from am.records.names import name_key
    from am.records.properties import split_link

    if ref in gone:
        return ref
    parts = split_link(ref) if ref.startswith("[[") else None
    if parts is None or parts[1] is not None:
        return None
    return gone_names.get(name_key(parts[0]))


def _dangling_after(gone: dict[str, str], gone_names: dict[str, str], report: Any, staged: dict[str, str],
                    changed: set[str], store: Any, vault_root: Path | None,
                    open_vault: VaultOpener | None) -> list[str]:
    """Return refusals for staged records that still point at ids this commit removes."""
    import re

    lines: list[str] = []
    for issue in report.issues:
        if issue.code not in ("unknown-topic", "missing-target"):
            continue
        quoted = re.search(r"'([^']*)'", issue.message)
        rid = _gone_id(quoted.group(1), gone, gone_names) if quoted else None
        if rid is not None:
            lines.append(f"error: {issue.path}: field '{issue.field}': names '{rid}', which this commit "
                         f"removes; {_fix_for(rid, gone[rid])} [missing-target]")
    for path, field, rid in _referrers(gone, gone_names, staged, changed, store, vault_root, open_vault):
        lines.append(f"error: {path}: field '{field}': names '{rid}', which this commit removes; "
                     f"{_fix_for(rid, gone[rid])} [missing-target]")
    return lines


def _referrers(gone: dict[str, str], gone_names: dict[str, str], staged: dict[str, str], changed: set[str],
               store: Any, vault_root: Path | None, open_vault: VaultOpener | None) -> list[tuple[str, str, str]]:
    """Return (path, field, id) of unchanged staged facts and relations that name a removed record.

    The vault's cache answers by topic membership, relation ends and the files
    that link by name; without one, the staged facts and relations are read.
    """
    from am.records.model import Fact, Relation

    found: list[tuple[str, str, str]] = []
    pairs: list[tuple[str, Any]] = []
    cache_used = False
    if vault_root is not None and open_vault is not None:
        try:
            with open_vault(vault_root) as vault:
                index = vault.cache()
                if index is not None:
                    for rid in sorted(gone):
                        pairs += [(str(p), r) for p, r in index.records(topic=rid)]
                    pairs += [(str(p), r) for p, r in index.name_ref_records()]
                    cache_used = True
        except Exception:  # noqa: BLE001 - no usable cache: read the files instead
            pairs, cache_used = [], False
    if not cache_used:
        from am.records.codec import decode_record_bytes, parse_record

        for path, oid in staged.items():
            if path in changed or path.startswith("topics/"):
                continue
            try:
                pairs.append((path, parse_record(decode_record_bytes(store.read_object(oid), path=path), path)))
            except Exception:  # noqa: BLE001 - a broken file is reported when it is committed
                continue
    for path, record in pairs:
        if path in changed or path not in staged:
            continue
        refs: list[tuple[str, str]] = []
        if isinstance(record, Fact):
            refs = [("topics", t) for t in record.topics] + [("supersedes", t) for t in record.supersedes]
        elif isinstance(record, Relation):
            refs = [("from", record.from_), ("to", record.to)]
        for field, ref in refs:
            gone_id = _gone_id(ref, gone, gone_names)
            if gone_id is not None:
                found.append((path, field, gone_id))
    return sorted(set(found))


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
        report = check_vault(vault, paths=paths)
        lines += [issue.describe() for issue in report.issues if issue.severity != "note"]
    for line in lines:
        out.write(f"am: {line}\n")
    head = vault.store.head()
    note_warnings(vault.root, vault.store.gitdir, f"{name} {str(head)[:10] if head else ''}".strip(), lines)
    return 0


def _complete_merge(vault: Any, out: TextIO) -> None:
    """After Git's own merge: commit the contested copies its merge driver could not write (am/upkeep/merges.py)."""
    from am.upkeep.merges import complete_merge

    made = complete_merge(vault)
    if made:
        out.write(f"am: the merge changed facts on both sides; both versions are kept as contested facts "
                  f"(commit {made[:10]}); resolve them with am fact supersede\n")


def run_vault_hook(name: str, args: Sequence[str], *, cwd: Path, stdin: bytes, out: TextIO,
                   open_vault: VaultOpener) -> int:
    """Run one vault hook in the repository at ``cwd``, then the hook it replaced.

    ``open_vault`` is the facade's opener (``am.vault.Vault.open``), handed down by the door.
    """
    from am.errors import AmError, NotAVaultError
    from am.git import GitStore

    if name not in VAULT_HOOKS:
        raise UsageError(f"unknown hook {name!r}; am handles: {', '.join(VAULT_HOOKS)}")
    try:
        store = GitStore.open(cwd)
    except NotAVaultError as err:
        out.write(f"am: {err}\n")
        return 0
    code = 0
    try:
        if name == "pre-commit":
            index_file = os.environ.get("GIT_INDEX_FILE")
            if index_file and not os.path.isabs(index_file):
                index_file = str(cwd / index_file)
            allow = os.environ.get("AM_ALLOW_SECRET", "") not in ("", "0")
            import io

            said = io.StringIO()
            code = pre_commit(store, index_file=index_file, allow_secrets=allow, out=said, vault_root=cwd,
                              open_vault=open_vault)
            out.write(said.getvalue())
            if code and (cwd / ".am" / "vault.yml").is_file():
                from am.upkeep.health import note_warnings

                note_warnings(store.root, store.gitdir, "pre-commit refused a commit",
                              [ln.strip() for ln in said.getvalue().splitlines() if ln.strip()])
        else:
            try:
                vault = open_vault(cwd)
            except NotAVaultError:
                vault = None
            if vault is not None:
                with vault:
                    if name in ("post-merge", "post-commit"):
                        _complete_merge(vault, out)
                    post_change(vault, name, args, stdin, out)
    except AmError as err:
        out.write(f"am: {name}: {err}\n")
        code = 1 if name == "pre-commit" else 0
    if code:
        return code
    return run_chained(store.gitdir, name, args, stdin)


def run_code_hook(name: str, args: Sequence[str], *, cwd: Path, vault_where: str | None, repo: str,
                  stdin: bytes, out: TextIO, open_vault: VaultOpener) -> int:
    """Run a code-repository hook: mark the facts watching the changed paths, then the chained hook."""
    from am.errors import AmError
    from am.git import GitStore
    from am.worlds.stale import mark_stale

    store = GitStore.open(cwd)
    head = store.head()
    since: str | None = None
    if name == "post-merge":
        since = _rev(store, "ORIG_HEAD")
    elif head is not None:
        parents = store.commit_info(head).parents
        since = parents[0] if parents else None
    try:
        with open_vault(vault_where, actor="am-watch") as vault:
            result = mark_stale(vault, code_root=store.root, repo=repo, since=since, until=head,
                                remember=True)
        if result.marked:
            out.write(f"am: {len(result.marked)} facts of {repo} are now pending-review "
                      f"(vault commit {str(result.commit)[:10]}): {', '.join(result.marked)}\n")
    except AmError as err:
        out.write(f"am: {name}: could not check watched paths: {err}\n")
    return run_chained(store.gitdir, name, args, stdin)
