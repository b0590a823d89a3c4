"""Reading a repository: refs, trees, blobs, history, ancestry (``Reader``, owned by ``GitStore``).

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, cast

import pygit2

from am.errors import GitError
from am.git.formats.trees import ChainTrees
from am.git.values import CommitInfo

# Past this many entries in two versions of a folder, tree_changes leaves the comparison to libgit2.
_BIG_FOLDER = 512
_BLOB_MODES = frozenset((0o100644, 0o100755, 0o120000))
_FILE = 0o100644
# One raw tree entry: mode, name, 20-byte id (file_changes reads trees' bytes).
_TREE_ENTRY = re.compile(rb"([0-7]+) ([^\0]*)\0(.{20})", re.DOTALL)
_TREE_MODE = (b"40000", b"040000")
_LINK, _GITLINK = b"120000", b"160000"


class Reader:
    """Reading a repository: refs, trees, blobs, history and ancestry (given the opened pygit2 Repository)."""

    def __init__(self, repo: pygit2.Repository, root: Path) -> None:
        self.repo = repo
        self.root = root
        self.gitdir = Path(repo.path)

    def build_commit(self, branch: str, files: dict[str, bytes], *, parents: Sequence[str], message: str,
                     author: tuple[str, str, int, int]) -> str:
        """Commit files over the first parent's tree and move ``branch`` there (for repositories am generates)."""
        base = self.repo[parents[0]].peel(pygit2.Tree).id if parents else None
        blobs = {tuple(PurePosixPath(p).parts): self.repo.create_blob(d) for p, d in files.items()}
        sig = pygit2.Signature(*author)
        tree = ChainTrees(self.repo).build(base, blobs)
        oid = self.repo.create_commit(None, sig, sig, message, tree,
                                      [pygit2.Oid(hex=p) for p in parents])
        ref = self.repo.references.get(f"refs/heads/{branch}")
        if ref is None:
            self.repo.references.create(f"refs/heads/{branch}", oid)
        else:
            ref.set_target(oid, f"commit: {message.splitlines()[0]}")
        return str(oid)

    def check_out(self, branch: str) -> None:
        """Point HEAD at a branch and write its files into a fresh work tree."""
        self.repo.set_head(f"refs/heads/{branch}")
        self.repo.checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)  # type: ignore[no-untyped-call]

    # ------------------------------------------------------------ reading

    def head_ref(self) -> str:
        """Return the branch HEAD points at, e.g. ``refs/heads/main`` (the direct ref a symbolic chain ends at).

        Read from the files when they settle it (each write asks twice more,
        and a libgit2 call lets go of Python's lock, which busy writer threads
        then hold); from libgit2 otherwise (reftable, an odd HEAD).
        """
        target: str | None = None
        try:
            text = (self.gitdir / "HEAD").read_bytes()
            if text.startswith(b"ref: refs/") and not (self.common_dir() / "reftable").exists():
                target = text[5:].strip().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            target = None
        if target is None:
            ref = self.repo.references.get("HEAD")
            if ref is None:
                raise GitError("HEAD is missing")
            if not isinstance(ref.target, str):
                if (self.common_dir() / "BISECT_LOG").exists():  # git bisect checks out commits detached
                    raise GitError("HEAD is detached: a git bisect is under way",
                                   hint="finish it before writing: git bisect reset")
                raise GitError("HEAD is detached", hint="check out a branch before writing: git switch main")
            target = ref.target
        # A branch may itself be a symbolic ref (git symbolic-ref refs/heads/a refs/heads/b): the
        # branch am moves is the direct ref at the end of the chain. A loose ref file holding an
        # id, or none (a packed ref, an unborn branch), settles it without asking libgit2.
        try:
            if not (self.common_dir() / target).read_bytes().startswith(b"ref:"):
                return target
        except (FileNotFoundError, NotADirectoryError):
            if not (self.gitdir / "reftable").exists():
                return target
        except OSError:
            pass
        for _ in range(10):
            inner = self.repo.references.get(target)
            if inner is None or not isinstance(inner.target, str):
                return target
            target = inner.target
        raise GitError(f"HEAD's branch is a chain of more than ten symbolic refs (at {target})",
                       hint="point HEAD at a branch: git switch main")

    def common_dir(self) -> Path:
        """Return the Git folder shared by every worktree of the repository (``gitdir`` itself for most)."""
        found = self.__dict__.get("_commondir")
        if found is None:
            try:
                text = (self.gitdir / "commondir").read_text().strip()
                found = (self.gitdir / text).resolve() if text else self.gitdir
            except OSError:
                found = self.gitdir
            self.__dict__["_commondir"] = found
        return found

    def head(self) -> str | None:
        """Return the commit id HEAD resolves to, or None on an unborn branch."""
        try:
            return str(self.repo.head.target)
        except (pygit2.GitError, KeyError):
            return None

    def branch_tip(self, ref: str) -> str | None:
        """Return the commit a ref points at, or None."""
        reference = self.repo.references.get(ref)
        if reference is None:
            return None
        return str(reference.resolve().target)

    def symbolic_target(self, ref: str) -> str | None:
        """Return the ref a symbolic ref names (``refs/remotes/origin/HEAD`` -> ``refs/remotes/origin/main``), or None."""
        reference = self.repo.references.get(ref)
        target = None if reference is None else reference.target
        return target if isinstance(target, str) else None

    def resolve(self, rev: str) -> str:
        """Resolve a revision (sha, branch, tag, HEAD~2) to a commit id."""
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise GitError(f"unknown revision {rev!r}") from None
        return str(commit.id)

    def read_blob(self, path: PurePosixPath | str, *, commit: str | None = None) -> bytes | None:
        """Return a file's bytes in a commit (HEAD by default), or None."""
        oid = self.blob_id(path, commit=commit)
        if oid is None:
            return None
        return self.read_object(oid)

    def read_object(self, oid: str) -> bytes:
        """Return the bytes of a blob by id (a partial clone's left-out blob fetched as git fetches it)."""
        try:
            return bytes(cast(pygit2.Blob, self.repo[oid]).data)
        except KeyError:
            from am.git.program.partial import missing_blob, promisor

            return missing_blob(self.root, oid, promisor(self.repo.config))

    def object_size(self, oid: str) -> int:
        """Return the size in bytes of an object by id, without reading it."""
        return int(self.repo.odb.read_header(pygit2.Oid(hex=oid))[1])

    def blob_size(self, oid: str) -> int:
        """Return a blob's size without reading it; 0 when it is not here (a partial clone's, fetched when read)."""
        try:
            return int(self.repo.odb.read_header(pygit2.Oid(hex=oid))[1])
        except KeyError:
            return 0

    def blob_id(self, path: PurePosixPath | str, *, commit: str | None = None) -> str | None:
        """Return the blob id of a path in a commit (HEAD by default), or None."""
        commit = commit or self.head()
        if commit is None:
            return None
        tree = self.repo[commit].peel(pygit2.Tree)
        try:
            entry = tree[str(path)]
        except KeyError:
            return None
        if entry.type_str != "blob":
            return None
        return str(entry.id)

    def blob_ids(self, paths: Iterable[str], *, commit: str) -> dict[str, str | None]:
        """Return each path's blob id in a commit (None: no file there), looking the commit up once.

        See ``tree_blob_ids``: each folder's tree is found once, so a batch's
        paths cost what they are, not what their folders hold.
        """
        return tree_blob_ids(self.repo, self.repo[commit].peel(pygit2.Tree), paths)

    def blob_as_git_stores(self, path: PurePosixPath | str, data: bytes) -> str | None:
        """Return the blob id git would store for these work-tree bytes at ``path``, after its filters (autocrlf)."""
        try:
            filters = self.repo.load_filter_list(str(path))
            if filters is None:
                return None
            return str(pygit2.hash(bytes(filters.apply_to_buffer(data))))
        except (pygit2.GitError, OSError, ValueError, TypeError):
            return None

    def tree_files(self, prefixes: Sequence[str], *, commit: str | None = None) -> Iterator[tuple[str, str]]:
        """Yield (path, blob id) of every file under the given top-level folders."""
        commit = commit or self.head()
        if commit is None:
            return
        tree = self.repo[commit].peel(pygit2.Tree)
        for prefix in prefixes:
            try:
                entry = tree[prefix]
            except KeyError:
                continue
            if entry.type_str == "tree":
                yield from self._walk(cast(pygit2.Tree, self.repo[entry.id]), prefix)

    def _walk(self, tree: pygit2.Tree, prefix: str) -> Iterator[tuple[str, str]]:
        for entry in tree:
            path = f"{prefix}/{entry.name}"
            if entry.type_str == "tree":
                yield from self._walk(cast(pygit2.Tree, self.repo[entry.id]), path)
            elif entry.type_str == "blob":
                yield path, str(entry.id)

    def diff_paths(self, old: str | None, new: str | None) -> list[tuple[str, str | None]]:
        """Return (path, new blob id or None if deleted) for every file that differs."""
        def tree_of(c: str | None) -> pygit2.Tree | None:
            return None if c is None else self.repo[c].peel(pygit2.Tree)
        old_tree, new_tree = tree_of(old), tree_of(new)
        if new_tree is None:
            return [(p, None) for p, _ in self.tree_files(["topics", "facts", "relations"], commit=old)]
        if old_tree is None:
            diff = new_tree.diff_to_tree(swap=True)
        else:
            diff = self.repo.diff(old_tree, new_tree)  # type: ignore[call-overload]
        out: list[tuple[str, str | None]] = []
        for delta in diff.deltas:
            if delta.status_char() == "D":
                out.append((delta.old_file.path, None))
            else:
                if delta.old_file.path != delta.new_file.path:
                    out.append((delta.old_file.path, None))
                out.append((delta.new_file.path, str(delta.new_file.id)))
        return out

    def tree_changes(self, old: str | None, new: str | None, *,
                     modes: dict[str, int] | None = None) -> list[tuple[str, str | None]]:
        """Like diff_paths, but skip subtrees whose ids are equal (libgit2's diff walks all: ~100 ms at 100k).

        ``modes``, when given, receives the mode in ``new`` of every file listed
        whose mode is not 100644 (an executable, a symbolic link), and a file
        whose mode alone changed is listed too (what a sync writes keeps Git's modes).
        """
        def tree_of(oid: Any) -> pygit2.Tree | None:
            return None if oid is None else self.repo[oid].peel(pygit2.Tree)

        out: list[tuple[str, str | None]] = []

        def walk(a: pygit2.Tree | None, b: pygit2.Tree | None, prefix: str) -> None:
            if a is not None and b is not None and len(a) + len(b) > _BIG_FOLDER:
                # A big folder (a bulk import's day): libgit2 compares the two sorted lists in C.
                for delta in a.diff_to_tree(b, pygit2.enums.DiffOption.INCLUDE_TYPECHANGE).deltas:
                    was, now = delta.old_file, delta.new_file
                    if was.mode in _BLOB_MODES and now.mode not in _BLOB_MODES:
                        out.append((prefix + was.path, None))
                    elif now.mode in _BLOB_MODES and (was.mode not in _BLOB_MODES or was.id != now.id
                                                      or (modes is not None and was.mode != now.mode)):
                        out.append((prefix + now.path, str(now.id)))
                        if modes is not None and now.mode != _FILE:
                            modes[prefix + now.path] = int(now.mode)
                return
            left = {str(e.name): e for e in a} if a is not None else {}
            right = {str(e.name): e for e in b} if b is not None else {}
            for name in sorted(left.keys() | right.keys()):
                ea, eb = left.get(name), right.get(name)
                if ea is not None and eb is not None and ea.id == eb.id and (modes is None
                                                                          or ea.filemode == eb.filemode):
                    continue
                path = f"{prefix}{name}"
                subtrees = [tree_of(e.id) if e is not None and e.type_str == "tree" else None for e in (ea, eb)]
                if any(t is not None for t in subtrees):
                    walk(subtrees[0], subtrees[1], path + "/")
                if ea is not None and ea.type_str == "blob" and (eb is None or eb.type_str != "blob"):
                    out.append((path, None))
                if eb is not None and eb.type_str == "blob":
                    out.append((path, str(eb.id)))
                    if modes is not None and eb.filemode != _FILE:
                        modes[path] = int(eb.filemode)

        walk(tree_of(old), tree_of(new), "")
        return out

    def file_changes(self, old: str | None, new: str | None) -> list[tuple[str, str | None]]:
        """Return what diff_paths does (its files, its order), reading only the folders that differ.

        Each folder's entries are compared as raw tree bytes (mode, name, id) in
        C, so an unchanged subtree or file costs nothing in Python: one commit
        of a 10k vault costs the few folders on its paths, where libgit2's diff
        reads every folder. As diff_paths: a file whose mode alone changed
        counts, one that became or stopped being a symlink is deleted and added,
        and a submodule is no file.
        """
        odb = self.repo.odb
        out: list[tuple[str, str | None]] = []

        def entries(tree: pygit2.Oid | None) -> set[tuple[bytes, bytes, bytes]]:
            return set(_TREE_ENTRY.findall(odb.read(tree)[1])) if tree is not None else set()

        def walk(a: pygit2.Oid | None, b: pygit2.Oid | None, prefix: str) -> None:
            left, right = entries(a), entries(b)
            was = {name: (mode, oid) for mode, name, oid in left - right}
            now = {name: (mode, oid) for mode, name, oid in right - left}
            for name in was.keys() | now.keys():
                path = prefix + name.decode("utf-8", "surrogateescape")
                ea, eb = was.get(name), now.get(name)
                ka, kb = _kind(ea), _kind(eb)
                if ka == "tree" or kb == "tree":
                    walk(pygit2.Oid(raw=ea[1]) if ea is not None and ka == "tree" else None,
                         pygit2.Oid(raw=eb[1]) if eb is not None and kb == "tree" else None, path + "/")
                if ka in ("file", "link") and ka != kb:  # gone, or a folder, a submodule, a symlink now
                    out.append((path, None))
                if eb is not None and kb in ("file", "link"):
                    out.append((path, eb[1].hex()))

        def root(c: str | None) -> pygit2.Oid | None:
            return None if c is None else self.repo[c].peel(pygit2.Tree).id

        walk(root(old), root(new), "")
        # Git's order: a folder sorts as its name and "/" ("a-b.md" before "a/x.md"); a path
        # deleted and added keeps that order (the sort is stable).
        out.sort(key=lambda change: change[0])
        return out

    def commit_info(self, oid: str) -> CommitInfo:
        """Return one commit's metadata."""
        c = self.repo[oid].peel(pygit2.Commit)
        return CommitInfo(
            id=str(c.id), parents=tuple(str(p) for p in c.parent_ids), author=c.author.name,
            email=c.author.email, time=c.commit_time, offset=c.commit_time_offset, message=c.message,
        )

    def walk(self, start: str | None = None) -> Iterator[CommitInfo]:
        """Yield commits reachable from ``start`` (HEAD), newest first."""
        start = start or self.head()
        if start is None:
            return
        for c in self.repo.walk(start, pygit2.enums.SortMode.TIME | pygit2.enums.SortMode.TOPOLOGICAL):
            yield CommitInfo(
                id=str(c.id), parents=tuple(str(p) for p in c.parent_ids), author=c.author.name,
                email=c.author.email, time=c.commit_time, offset=c.commit_time_offset, message=c.message,
            )

    def find_commit(self, rev: str) -> str | None:
        """Return the full id of the commit a sha prefix, branch or tag names, or None."""
        try:
            return str(self.repo.revparse_single(rev).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError, TypeError):
            return None

    def ancestors(self, tip: str, *, known: str | None = None) -> set[str]:
        """Return ``tip`` and every commit reachable from it, walking the history once.

        With ``known`` (an ancestor whose history the caller already has), walk
        only the commits reachable from ``tip`` and not from ``known``.
        """
        walker = self.repo.walk(tip, pygit2.enums.SortMode.NONE)
        if known is not None:
            walker.hide(known)
        return {str(c.id) for c in walker}

    def topo_history(self, tip: str) -> list[tuple[str, tuple[str, ...]]]:
        """Return (commit, parents) for ``tip`` and every ancestor, parents before children."""
        walker = self.repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
        return [(str(c.id), tuple(str(p) for p in c.parent_ids)) for c in walker]

    def touched_paths(self, commit: str) -> list[str]:
        """Return the files a commit changed itself: against its parent, or a merge's against every parent."""
        c = self.repo[commit].peel(pygit2.Commit)
        parents = [str(p) for p in c.parent_ids]
        if not parents:
            return sorted({p for p, _ in self.tree_changes(None, commit)})
        found: set[str] | None = None
        for parent in parents:
            paths = {p for p, _ in self.tree_changes(parent, commit)}
            found = paths if found is None else found & paths
            if not found:
                break
        return sorted(found or ())

    def ref_names(self) -> list[str]:
        """Return the names of every reference (refs/heads/..., refs/remotes/..., refs/tags/...)."""
        return sorted(str(r) for r in self.repo.references)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Return whether ``ancestor`` is ``descendant`` or reachable from it."""
        if ancestor == descendant:
            return True
        try:
            return bool(self.repo.descendant_of(descendant, ancestor))
        except (KeyError, ValueError, pygit2.GitError):
            return False

    def last_change(self, path: str, *, start: str | None = None) -> str | None:
        """Return the newest commit on ``start``'s (HEAD's) first-parent line that changed ``path``.

        What ``git log -1 --first-parent -- path`` names: on an error path, to say which commit
        brought a file am cannot read (a merge, when the other side's change came in by one).
        """
        start = start or self.head()
        if start is None:
            return None
        walker = self.repo.walk(start, pygit2.enums.SortMode.TOPOLOGICAL)
        walker.simplify_first_parent()
        mine = self.blob_id(path, commit=start)
        for c in walker:
            parent = str(c.parent_ids[0]) if c.parent_ids else None
            before = None if parent is None or parent not in self.repo else self.blob_id(path, commit=parent)
            if before != mine:
                return str(c.id)
        return None

    def last_commit_at(self, moment: float, *, start: str | None = None) -> str | None:
        """Return the vault's commit as of a Unix time: the newest well-dated first-parent commit dated at or before it.

        Walking ``start``'s (HEAD's) first-parent line newest first, the answer is the first
        commit dated at or before ``moment`` whose date is no earlier than any commit in its
        history. A commit dated earlier than its history (a machine without a clock, a rebase
        keeping old dates) was made some time after that history; not knowing when, it counts
        from the next well-dated commit after it, so a view as of T never holds a fact that may
        have been written after T. The first date at or before T alone (git's ``--before``) let
        one such commit bring every commit under it into a view of the past. docs/worlds.md.
        """
        start = start or self.head()
        if start is None:
            return None
        sort = pygit2.enums.SortMode
        # One walk, parents first: each commit's date, its newest date over itself and its history, its first parent.
        seen: dict[pygit2.Oid, tuple[int, int, pygit2.Oid | None]] = {}
        for c in self.repo.walk(start, sort.TOPOLOGICAL | sort.REVERSE):
            own = latest = c.commit_time
            parents = c.parent_ids
            for p in parents:
                known = seen.get(p)
                if known is not None and known[1] > latest:
                    latest = known[1]
            seen[c.id] = (own, latest, parents[0] if parents else None)
        at: pygit2.Oid | None = self.repo[start].id
        while at is not None and at in seen:  # a shallow clone's first-parent line stops at its boundary
            own, latest, first = seen[at]
            if own <= moment and own >= latest:
                return str(at)
            at = first
        return None


def _kind(entry: tuple[bytes, bytes] | None) -> str | None:
    """Return what a raw tree entry (mode, id) is: "tree", "file", "link", "submodule", or None for no entry."""
    if entry is None:
        return None
    mode = entry[0]
    return "tree" if mode in _TREE_MODE else "link" if mode == _LINK else "submodule" if mode == _GITLINK else "file"


def tree_blob_ids(repo: pygit2.Repository, tree: pygit2.Tree | None, paths: Iterable[str], *,
                  kinds: tuple[str, ...] | None = ("blob",),
                  modes: dict[str, int] | None = None) -> dict[str, str | None]:
    """Return each path's blob id under ``tree`` (None: no file there, or no tree), finding each folder's tree once.

    ``kinds``: the entry types that count (None: any, a folder's tree id too).
    ``modes`` receives Git's mode of each file found that is not 100644 (an executable, a symbolic link).

    A lookup by full path (``tree["facts/2026/05/01/f-x.md"]``) goes through
    libgit2's object cache for every folder on the way. An import's day folder
    grows to megabytes (5.6 MB at 100k facts); each batch makes a new version
    of it, the cache (256 MiB in all) evicts old and current ones alike, and
    each lookup after an eviction read and parsed the folder again: 36 ms a
    path, 50-80 s for one batch of a 100k import. Here each folder's tree is
    looked up once and held; a name in it is a binary search.
    """
    found: dict[str, str | None] = {}
    folders: dict[str, pygit2.Tree | None] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        if folder not in folders:
            folders[folder] = _subtree(repo, tree, folder)
        sub = folders[folder]
        if sub is None:
            found[path] = None
            continue
        try:
            entry = sub[name]
        except KeyError:
            found[path] = None
            continue
        found[path] = str(entry.id) if kinds is None or entry.type_str in kinds else None
        if modes is not None and entry.filemode in _BLOB_MODES and entry.filemode != _FILE:
            modes[path] = int(entry.filemode)
    return found


def _subtree(repo: pygit2.Repository, tree: pygit2.Tree | None, folder: str) -> pygit2.Tree | None:
    """Return the tree of ``folder`` under ``tree`` (the root for ""), or None if it is not a folder there."""
    if tree is None or not folder:
        return tree
    try:
        entry = tree[folder]
    except KeyError:
        return None
    if entry.type_str != "tree":
        return None
    return cast(pygit2.Tree, repo[entry.id])
