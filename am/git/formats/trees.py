"""The trees of a chain of commits, each folder kept as sorted entries from one commit to the next.

A batch commits up to dozens of facts into one day's folder, each commit
with its own tree, so that folder is written again for every commit. With
libgit2's ``TreeBuilder`` each write sorted, serialised and hashed the whole
folder (~0.9 ms a commit at 1,600 entries, kept builder), and a new builder
first read the previous tree back and parsed it (~1.6 ms in all). Here a
folder is a sorted list of its entries' bytes: a change is a ``bisect`` and
a list insert, a write one ``join`` and one SHA-1 (hashlib) of the result,
~0.1 ms at 1,600 entries. The folders written last are kept (by tree id, so
a kept folder is only ever used for the very tree it holds) for the next
commit and the next batch, and a folder is parsed from its tree only when
someone else wrote it.

Git's tree format: entries ``<mode> <name>\\0<20-byte id>``, sorted by name
with a folder's name compared as if it ended in ``/``. Folders are written
with mode ``40000`` and files with ``100644``, as git writes them; entries
am does not change are kept byte for byte.

Decisions: docs/decisions/git.md.
"""

from __future__ import annotations

import hashlib
import operator
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Sequence
from itertools import islice
from typing import TYPE_CHECKING

import pygit2
from pygit2.enums import ObjectType

from am.errors import ConflictError

if TYPE_CHECKING:
    from am.git.formats.packs import PackSink

__all__ = ["ChainTrees", "Kept"]

Changes = dict[tuple[str, ...], pygit2.Oid]
_TREE_MODES = (b"40000", b"040000")  # git writes the first; some old tools wrote the second
_MANY = 16  # files put into one folder at once from which one merge beats an insert each


class _Folder:
    """A tree's entries as sorted sort keys (a folder's name + "/") and the matching entry bytes."""

    __slots__ = ("keys", "entries")

    def __init__(self, keys: list[bytes], entries: list[bytes]) -> None:
        self.keys = keys
        self.entries = entries

    @classmethod
    def parse(cls, data: bytes) -> _Folder:
        """Read a tree object's body; raise ValueError if it is damaged."""
        keys: list[bytes] = []
        entries: list[bytes] = []
        at, end = 0, len(data)
        while at < end:
            space = data.index(b" ", at)
            nul = data.index(b"\0", space)
            if nul + 21 > end:
                raise ValueError("a tree entry is cut short")
            name = data[space + 1:nul]
            keys.append(name + b"/" if data[at:space] in _TREE_MODES else name)
            entries.append(data[at:nul + 21])
            at = nul + 21
        if not all(map(operator.lt, keys, islice(keys, 1, None))):
            # Out of order or a name twice: not a tree git writes. Sorted as libgit2's builder would.
            pairs = dict(zip(keys, entries))
            keys = sorted(pairs)
            entries = [pairs[k] for k in keys]
        return cls(keys, entries)

    def find(self, name: bytes) -> tuple[int, bool] | None:
        """The position of the entry called ``name`` and whether it is a folder, or None."""
        for key, folder in ((name, False), (name + b"/", True)):
            i = bisect_left(self.keys, key)
            if i < len(self.keys) and self.keys[i] == key:
                return i, folder
        return None

    def put(self, name: bytes, oid: pygit2.Oid, *, folder: bool) -> None:
        """Set the entry ``name`` (replacing whatever had that name) to a file or folder ``oid``."""
        found = self.find(name)
        if found is not None:
            del self.keys[found[0]]
            del self.entries[found[0]]
        key = name + b"/" if folder else name
        i = bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.entries.insert(i, (b"40000 " if folder else b"100644 ") + name + b"\0" + oid.raw)

    def put_files(self, files: list[tuple[bytes, pygit2.Oid]]) -> None:
        """Set many file entries (distinct names) at once, as ``put`` each would.

        An import's batch puts ~1,600 files into a folder of up to 100k: an
        insert each moved the lists ~1,600 times (~0.5 s a batch at 100k).
        Here replaced files are set in place and the new entries spliced in
        with one pass of slices.
        """
        if len(files) < _MANY:
            for name, oid in files:
                self.put(name, oid, folder=False)
            return
        added: list[tuple[bytes, bytes]] = []
        gone: set[int] = set()
        for name, oid in files:
            entry = b"100644 " + name + b"\0" + oid.raw
            found = self.find(name)
            if found is not None and not found[1]:
                self.entries[found[0]] = entry  # a file replacing a file: the same key, in place
                continue
            if found is not None:
                gone.add(found[0])  # a folder of that name: its entry goes
            added.append((name, entry))
        if gone:
            self.keys = [k for i, k in enumerate(self.keys) if i not in gone]
            self.entries = [e for i, e in enumerate(self.entries) if i not in gone]
        if not added:
            return
        # The new keys sorted, then spliced in with one pass of slices (no sort of the whole folder).
        added.sort(key=operator.itemgetter(0))
        keys, entries = self.keys, self.entries
        at = [bisect_left(keys, k) for k, _ in added]
        new_keys, new_entries = keys[:at[0]], entries[:at[0]]
        for n, (key, entry) in enumerate(added):
            end = at[n + 1] if n + 1 < len(added) else len(keys)
            new_keys.append(key)
            new_entries.append(entry)
            new_keys += keys[at[n]:end]
            new_entries += entries[at[n]:end]
        self.keys, self.entries = new_keys, new_entries

    def body(self) -> bytes:
        return b"".join(self.entries)


class Kept:
    """Folders written last, by path: (the folder, the tree id it holds); shared by the writers of one process."""

    def __init__(self) -> None:
        self.folders: dict[tuple[str, ...], tuple[_Folder, pygit2.Oid]] = {}

    def entry_ids(self, root: pygit2.Oid | None, paths: Sequence[str]) -> dict[str, str | None]:
        """Return the id of each path's entry under the tree ``root`` for the paths whose folders are kept.

        A folder counts only if every folder from the root down is kept for the
        very tree the one above names; the paths of other folders are left out
        (the caller asks libgit2). An import's day folder is megabytes: read
        here, not parsed again by libgit2 for each batch's checks.
        """
        found: dict[str, str | None] = {}
        if root is None:
            return found
        folders: dict[str, _Folder | None] = {}
        for path in paths:
            where, _, name = path.rpartition("/")
            if where not in folders:
                folders[where] = self._folder_at(root, tuple(where.split("/")) if where else ())
            folder = folders[where]
            if folder is not None:
                at = folder.find(name.encode())
                found[path] = None if at is None else folder.entries[at[0]][-20:].hex()
        return found

    def _folder_at(self, root: pygit2.Oid, parts: tuple[str, ...]) -> _Folder | None:
        kept = self.folders.get(())
        if kept is None or kept[1] != root:
            return None
        folder = kept[0]
        for i in range(len(parts)):
            at = folder.find(parts[i].encode())
            if at is None or not at[1]:
                return None
            sub = self.folders.get(parts[:i + 1])
            if sub is None or sub[1].raw != folder.entries[at[0]][-20:]:
                return None
            folder = sub[0]
        return folder


class ChainTrees:
    """Writes trees through ``repo``, each a change of an earlier one, keeping the folders it wrote last.

    ``sink``, if given, is where trees are read from and new ones go
    directly (the batch's ``PackSink``: pygit2 reads a custom object
    database only through object lookups); otherwise both go through
    ``repo``'s object database. ``bases`` (default: the sink's) gets each new tree's id mapped to
    the tree it replaces at the same path (the batch's pack stores it as a
    delta of that one). ``kept`` carries the folders over to a later chain.
    """

    def __init__(self, repo: pygit2.Repository, *, sink: PackSink | None = None,
                 bases: dict[bytes, bytes] | None = None, kept: Kept | None = None) -> None:
        self.repo = repo
        self.objects = None if sink is None else sink.objects
        self.read: Callable[[pygit2.Oid], tuple[int, bytes]] = repo.odb.read if sink is None else sink.read_cb
        self.bases = sink.bases if bases is None and sink is not None else bases
        self.kept = kept if kept is not None else Kept()

    def build(self, base: pygit2.Oid | None, changes: Changes) -> pygit2.Oid:
        """Write the tree ``base`` (None: an empty one) with ``changes`` (path parts → blob) applied; return its id.

        Raises ConflictError, changing nothing, if a change needs a folder where the tree has a file.
        """
        return self._folder((), base, changes)

    def _load(self, path: tuple[str, ...], base: pygit2.Oid | None) -> _Folder:
        # Taken out while it changes: a build that fails half way leaves no folder that no longer matches its tree.
        kept = self.kept.folders.pop(path, None)
        if kept is not None and kept[1] == base:
            return kept[0]
        if base is None:
            return _Folder([], [])
        kind, data = self.read(base)
        if kind != ObjectType.TREE:
            raise ConflictError(f"{'/'.join(path) or 'the root'} is not a folder in the vault's tree")
        try:
            return _Folder.parse(data)
        except ValueError as err:
            raise ConflictError(f"the tree of {'/'.join(path) or 'the root'} ({base}) is damaged: {err}") from None

    def _folder(self, path: tuple[str, ...], base: pygit2.Oid | None, changes: Changes) -> pygit2.Oid:
        folder = self._load(path, base)
        groups: dict[str, Changes] = defaultdict(dict)
        files: list[tuple[bytes, pygit2.Oid]] = []
        for parts, oid in changes.items():
            if len(parts) == 1:
                files.append((parts[0].encode(), oid))
            else:
                groups[parts[0]][parts[1:]] = oid
        folder.put_files(files)
        for name, sub in groups.items():
            raw = name.encode()
            found = folder.find(raw)
            if found is not None and not found[1]:
                raise ConflictError(f"{'/'.join((*path, name))} is a file in the vault where am needs a folder")
            sub_base = None if found is None else pygit2.Oid(raw=folder.entries[found[0]][-20:])
            folder.put(raw, self._folder((*path, name), sub_base, sub), folder=True)
        written = self._write(folder.body())
        self.kept.folders[path] = (folder, written)
        if self.bases is not None and base is not None and written != base:
            self.bases[written.raw] = base.raw
        return written

    def _write(self, body: bytes) -> pygit2.Oid:
        if self.objects is None:
            return self.repo.odb.write(ObjectType.TREE, body)
        digest = hashlib.sha1(b"tree %d\0" % len(body))
        digest.update(body)
        oid = pygit2.Oid(raw=digest.digest())
        self.objects[oid] = (int(ObjectType.TREE), body)
        return oid
