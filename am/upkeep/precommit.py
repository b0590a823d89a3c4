"""The pre-commit hook: the staged record files against the format, and records a commit would leave dangling.

Notes (Markdown without am frontmatter) pass anywhere. Other staged files
count by id (named after their id, or read when their name is readable) so a
one-file commit in a 10k-fact vault reads only the topics (bench/bench_precommit.py).
A commit that removes or renames a record that staged facts or relations
still name is refused, one line per referring file, with the command that does
it properly.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, TextIO

from am.upkeep.hookscan import RECORD_TOPS, is_record_file, secret_findings
from am.upkeep.postcommit import forget_checked, remember_checked

if TYPE_CHECKING:
    from collections.abc import Callable

    from am.packs.reader import VaultOpener

__all__ = ["pre_commit"]


def _read_staged(store: Any, index: _Staged, path: str) -> bytes:
    blob = index.blob(path)
    if blob is None:
        raise OSError(f"{path} is not staged")
    return bytes(store.read_object(blob))


class _StagedMap:
    """{path: blob} of the staged record files, looked up in the index on demand."""

    def __init__(self, index: _Staged) -> None:
        self._index = index

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._index.blob(path) is not None

    def __getitem__(self, path: str) -> str:
        blob = self._index.blob(path)
        if blob is None:
            raise KeyError(path)
        return blob

    def items(self) -> list[tuple[str, str]]:
        return [(p, b) for p in self._index.paths if is_record_file(p) and (b := self._index.blob(p)) is not None]


def _is_note_path(path: str) -> bool:
    return path.endswith(".md") and not is_record_file(path) and "/." not in "/" + path


class _Staged:
    """The index a commit is made from: its Markdown paths as git lists them, and a staged blob on demand.

    ``text`` holds the paths NUL-separated (with a NUL before the first), so
    the few regular expressions below sort 10k paths in C, not in a Python loop
    over every entry; Git's index itself is parsed only when a blob other than
    the commit's own is needed (a readable name, a supersession, no cache).
    """

    def __init__(self, store: Any, index_file: str | None) -> None:
        self._store, self._index_file = store, index_file
        self._index: Any = None
        self._dict: dict[str, str] | None = None
        listing = store.staged_paths(index_file, ("*.md",))
        self.text = "\0" + listing.decode("utf-8", "surrogateescape")

    @property
    def paths(self) -> list[str]:
        return [p for p in self.text.split("\0") if p]

    def blob(self, path: str) -> str | None:
        if self._index is None and self._dict is None:
            from am.git.formats.gitindex import GitIndex, IndexUnsupported

            try:
                self._index, _ = GitIndex.read(Path(self._index_file) if self._index_file
                                               else self._store.gitdir / "index")
            except (IndexUnsupported, ValueError, OSError):  # a format am's reader leaves to git
                self._dict = dict(self._store.staged_entries(self._index_file))
        if self._dict is not None:
            return self._dict.get(path)
        found: str | None = self._index.staged(path)
        return found


_TOPS = ("topics/", "facts/", "relations/")


def _not_ids(stems: list[str]) -> set[str]:
    """Return the file names (without .md) that are not id-shaped: one regular expression over them all."""
    from am.records.ids import ID_PATTERN

    joined = "\n".join(stems)
    bad = set(re.findall(rf"(?m)^(?!{ID_PATTERN}$).*$", joined))
    if "\n" in "".join(stems):  # a file name with a line break in it: never an id
        bad |= {stem for stem in stems if "\n" in stem}
    return bad


def _work_file_is(root: Path, path: str, blob: str) -> bool:
    """Return whether the work tree's file at ``path`` holds exactly the blob ``blob`` (git's hash of its bytes)."""
    import hashlib

    try:
        data = (root / path).read_bytes()
    except OSError:
        return False
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == blob


def pre_commit(store: Any, *, index_file: str | None, allow_secrets: bool, out: TextIO,
               vault_root: Path | None = None, open_vault: VaultOpener | None = None) -> int:
    """Check the staged record files; return 1 (refuse the commit) on errors or suspected secrets.

    ``store`` reads Git through the git CLI (``am.git.program.cligit.CliStore``: no
    pygit2 in a hook). On success, what the post-commit lint would print for
    these files is remembered for it (``am.upkeep.postcommit``).

    Notes (Markdown without am frontmatter) pass anywhere. A commit that
    removes or renames a record other records still point at is refused, with
    the command that does it properly.
    """

    forget_checked(store.gitdir)
    head_now = store.head()
    delta = [(p, old, new) for p, old, new in store.staged_changes(index_file, RECORD_TOPS) if is_record_file(p)]
    if not delta:
        remember_checked(store.gitdir, head_now, [], [])
        return 0
    from am.records.names import NOTE_PREFIX, Names, name_key
    from am.records.notes import note_text
    from am.upkeep.check import check_texts, name_other, session_file_issues
    from am.upkeep.vaultfiles import attachments

    head = {p: old for p, old, _ in delta if old is not None}
    changed = sorted(p for p, _, new in delta if new is not None)
    deleted = sorted(p for p, _, new in delta if new is None)
    changed_set = set(changed)
    index = _Staged(store, index_file)
    names = Names()
    listed = index.text.split("\0")
    records = [p for p in listed if p.startswith(_TOPS) and "/." not in p and p not in changed_set]
    stems = [p[p.rfind("/") + 1:-3] for p in records]
    bad = _not_ids(stems)
    # Records named after their id: taken at their word, no read (the file says so); the first path wins.
    others: dict[str, str] = {stem: p for p, stem in zip(reversed(records), reversed(stems))
                              if stem not in bad and len(stem) <= 120}
    # Topics named after their id: their titles and aliases are read only if a link names something else.
    titled = [p for p in records if p.startswith("topics/") and others.get(p[p.rfind("/") + 1:-3]) == p]
    # Readable names: read only when ids or names are needed (file name, title, alias).
    unread = [p for p, stem in zip(records, stems) if stem in bad or len(stem) > 120]

    def read(paths: list[str]) -> None:
        for p in paths:
            name_other(p, functools.partial(_read_staged, store, index, p), others, names)
        paths.clear()

    def read_names(key: str | None = None) -> str | None:
        # A name no file name or id answers to: every topic's title and aliases (as the cache knows them).
        names.fallback = None
        read(unread)
        read(titled)
        return None if key is None else names.resolve(key)

    names.fallback = read_names

    def load_other(rid: str) -> Any:
        from am.records.codec import decode_record_bytes, parse_record

        path = others[rid]
        try:
            return parse_record(decode_record_bytes(_read_staged(store, index, path), path=path), path)
        except Exception:  # noqa: BLE001 - unreadable: the supersession check skips it
            return None

    staged = _StagedMap(index)
    staged_blob = {p: new for p, _, new in delta if new is not None}
    blobs = {p: store.read_object(staged_blob[p]) for p in changed}
    if deleted or any(p in head for p in changed):
        read(unread)  # an id may leave one file for another: know every file's id first
    notes = [p for p in listed if p and not p.startswith(_TOPS) and "/." not in "/" + p]
    parsed: list[tuple[str, Any]] = []
    report = check_texts(((p, blobs[p]) for p in changed), other_ids=others, load_other=load_other,
                         names=names, notes=notes, schema=False,  # the plain-Python rules: no jsonschema import
                         attachment=attachments(vault_root) if vault_root is not None else None, parsed=parsed)
    refused = [i.describe() for i in report.errors]
    # A session topic whose file: leads out of sessions/ would have am read (and commit) any file of the machine.
    refused += [i.describe() for i in session_file_issues(vault_root or Path(store.root), parsed)]
    if not allow_secrets:
        for p in changed:
            refused += [f"error: {line} [secret]" for line in secret_findings(p, blobs[p])]

    @functools.cache
    def was(p: str) -> bytes:  # HEAD's version of a file: read once, and only if needed
        return bytes(store.read_object(head[p]))

    @functools.cache
    def was_id(p: str) -> str | None:  # its id (an id-shaped fact or relation name needs no read)
        return _id_of(p, functools.partial(was, p))

    # A record whose frontmatter a slip lost (or made a person's own) is a note now: its id is gone.
    as_notes = {p for p in changed if p in head and note_text(p, blobs[p]) is not None
                and note_text(p, was(p)) is None}
    now_id = {p: _id_of(p, blobs[p]) for p in changed if p not in as_notes}
    now_ids = set(others) | set(now_id.values())
    gone: dict[str, str] = {}  # id -> the path HEAD had it at
    gone_names: dict[str, str] = {}  # what links called it (file name, title, aliases) -> id
    for p in deleted + [p for p in changed if p in head]:
        rid = was_id(p)
        if rid and rid not in now_ids:
            gone[rid] = p
            gone_names.update((n, rid) for n in _names_of(p, rid, was(p)))
    for n in list(gone_names):
        found = names.resolve(n)  # a note answering to the name is no topic, nor a relation's end
        if (found is not None and not found.startswith(NOTE_PREFIX)) or any(
                n == name_key(now or "") for now in now_id.values()):
            del gone_names[n]  # another file answers to that name now
    # HEAD and the work tree both hold the record, only Git's index lacks it: an am write whose index update
    # never happened (issue 36), not a person's deletion (which removes the file): the commit would delete it.
    unstaged = [p for p in deleted if _work_file_is(vault_root or Path(store.root), p, head[p])]
    refused += [f"error: {p} is committed and in the work tree, but Git's index lacks it: this commit would "
                f"delete it from the vault; put it back with: git add '{p}' (or am doctor --fix), then commit "
                "again" for p in unstaged]
    for p in deleted:
        if was_id(p) not in gone or p in unstaged:
            continue  # moved: the same id lives on in another file
        out.write(f"am: warning: {p} is deleted; am never deletes a record (expire it instead), "
                  "but Git history keeps it\n")
    for p in sorted(as_notes):
        if (rid := was_id(p)) in gone:
            out.write(f"am: warning: {p} was record {rid} and is now a note (no am frontmatter: it must start "
                      f"with ---, then type: and id:); to keep the record: git checkout HEAD -- '{p}'\n")
    if gone:
        refused += _dangling_after(gone, gone_names, report, staged, changed_set, store, vault_root, open_vault)
    if refused:
        # Warnings ride along with a refusal; on success post-commit prints them once.
        out.writelines(f"am: {issue.describe()}\n" for issue in report.warnings)
        out.write("am: commit refused; the staged records break the vault's format:\n")
        out.writelines(f"  {line}\n" for line in dict.fromkeys(refused))
        out.write("fix those files and `git add` them again. A secret that is not one: "
                  "AM_ALLOW_SECRET=1 git commit ...\n")
        return 1
    # What post-commit would find linting the same files: it prints these when the commit is exactly this one.
    remember_checked(store.gitdir, head_now, [(p, new) for p, _, new in delta],
                     [issue.describe() for issue in report.issues if issue.severity != "note"])
    return 0


def _id_of(path: str, data: bytes | Callable[[], bytes]) -> str | None:
    """Return the id of a record file's bytes (by its id-shaped file name for facts and relations), or None.

    ``data`` may be a function that reads them: called only when the name does not settle it.
    """
    from am.records.ids import is_valid_id

    stem = PurePosixPath(path).stem
    if is_valid_id(stem) and not path.startswith("topics/"):
        return stem
    if callable(data):
        data = data()
    from am.records.codec import decode_record_bytes, parse_meta, split_frontmatter

    try:
        text = decode_record_bytes(data, path=path)
        front, _, eol = split_frontmatter(text, path=path)
        rid = parse_meta(front, eol, path=path).get("id")
    except Exception:  # noqa: BLE001 - a broken or plain file: not a record that could be pointed at
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


def _dangling_after(gone: dict[str, str], gone_names: dict[str, str], report: Any, staged: Any,
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


def _referrers(gone: dict[str, str], gone_names: dict[str, str], staged: Any, changed: set[str],
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
