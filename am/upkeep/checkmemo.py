"""`am check`'s derived data: each file's own findings and what the cross-file checks read, kept by content.

What ``am check`` finds in one file alone (parse, schema, the write-time
rules, the folder and name it sits at) depends on nothing but the file's path
and bytes, and the rules; so does the little the checks across files read of
its record (a ``Gist``: id, type, names, topics, supersessions, ends, world,
links). Both are kept in ``<gitdir>/am/check-memo``, one entry per file keyed
by a hash of its path and bytes, so the next check reads and hashes every
file, as before, but parses only the ones whose bytes it has not seen. The
cross-file checks (duplicate ids, links, names, worlds, supersessions) run on
the gists every time.

The memo is derived: deleting it changes no output. It sits under ``.git``,
which a clone or a pull never writes, so no vault can ship one. Its first
line holds a fingerprint of the rules (am's record and check modules, its
schemas, the versions of Python and of the libraries whose messages it
repeats): another am's memo is ignored whole and replaced. Its second line is
a hash of the rest: a damaged or hand-edited memo is ignored whole, so no
entry can hide an error. See docs/check.md.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any, NamedTuple

from am.records.model import Fact, Record, Relation, Topic

__all__ = ["CheckMemo", "Gist", "MEMO_FILE", "gist_of"]

log = logging.getLogger(__name__)

MEMO_FILE = "check-memo"  # under <gitdir>/am/
_MAGIC = b"am check memo 1\n"
_MAX_BYTES = 1 << 30  # a memo past this is not read (a 10k-fact vault's is ~2 MB)
# The modules whose code decides a file's own findings and its gist; with the schemas, Python's and the
# libraries' versions they make the fingerprint, so a changed rule anywhere recomputes every entry.
_RULE_MODULES = ("errors.py", "upkeep/check.py", "upkeep/checkmemo.py")
_LIBRARIES = (("yaml", "pyyaml"), ("jsonschema", "jsonschema"), ("markdown_it", "markdown_it_py"))


class Gist(NamedTuple):
    """What the checks across files read of one record: its names, references, world and body's links.

    A tuple (built ~5x faster than a frozen dataclass: a check makes one per file), written to JSON as a list.
    """

    type: str
    id: str
    status: str
    title: str | None = None  # a topic's
    aliases: tuple[str, ...] = ()  # a topic's
    topics: tuple[str, ...] = ()  # a fact's
    supersedes: tuple[str, ...] = ()  # a fact's
    superseded_by: str | None = None  # a fact's
    from_: str | None = None  # a relation's
    to: str | None = None  # a relation's
    repo: str | None = None  # a fact's or relation's
    version: str | None = None
    commit: str | None = None
    kind: str | None = None  # a topic's
    session_file: tuple[str, str | None] | None = None  # a session topic's file: (its repr, the value if text)
    merged: bool = False  # the body holds two texts a merge kept
    links: tuple[tuple[str, int], ...] = ()  # the body's links within the vault: (target, line)

    @classmethod
    def from_json(cls, row: list[Any]) -> Gist:
        """Return the gist a JSON list of its fields holds."""
        (rtype, rid, status, title, aliases, topics, supersedes, superseded_by, from_, to, repo, version, commit,
         kind, session, merged, links) = row
        return cls(rtype, rid, status, title, tuple(aliases), tuple(topics), tuple(supersedes), superseded_by, from_,
                   to, repo, version, commit, kind, None if session is None else (session[0], session[1]),
                   merged is True, tuple((t, n) for t, n in links))


def gist_of(record: Record) -> Gist:
    """Return what the checks across files read of a record."""
    from am.records.links import parse_links
    from am.records.merge import has_merged_text

    links = tuple([(link.target, link.line) for link in parse_links(record.body) if link.vault is None and link.target])
    merged = has_merged_text(record.body)
    if isinstance(record, Fact):  # positional: a check builds one per file
        return Gist("fact", record.id, record.status, None, (), record.topics, record.supersedes,
                    record.superseded_by, None, None, record.repo, record.version, record.commit, None, None, merged,
                    links)
    if isinstance(record, Relation):
        return Gist("relation", record.id, record.status, None, (), (), (), None, record.from_, record.to,
                    record.repo, record.version, record.commit, None, None, merged, links)
    assert isinstance(record, Topic)
    session = None
    if record.kind == "session" and "file" in record.extra:
        value = record.extra["file"]
        session = (repr(value), value if isinstance(value, str) else None)
    return Gist("topic", record.id, record.status, record.title, record.aliases, (), (), None, None, None, None, None,
                None, record.kind, session, merged, links)


class CheckMemo:
    """The entries of one vault's memo: content key -> (the file's own findings, its gist or None)."""

    def __init__(self, file: Path | None, rules: str, entries: dict[str, Any]) -> None:
        self.file, self.rules = file, rules
        self._old = entries
        self._new: dict[str, Any] = {}
        self._changed = False

    @classmethod
    def open(cls, gitdir: Path | str) -> CheckMemo:
        """Return the memo of a repository (empty when there is none, or it is another am's, or damaged)."""
        file = Path(gitdir) / "am" / MEMO_FILE
        rules = fingerprint()
        return cls(file, rules, _load(file, rules))

    @staticmethod
    def key(path: str, data: bytes) -> str:
        """Return the content key of a file: its path and its bytes, nothing else."""
        return hashlib.blake2b(path.encode("utf-8", "surrogateescape") + b"\0" + data, digest_size=20).hexdigest()

    def get(self, key: str) -> tuple[list[tuple[str, str, str | None, int | None, str]], Gist | None] | None:
        """Return a file's own findings (severity, code, field, line, message) and its gist, or None if not kept."""
        row = self._old.get(key)
        if row is None:
            return None
        try:
            found = [(str(s), str(c), f, n, str(m)) for s, c, f, n, m in row[0]]
            gist = None if row[1] is None else Gist.from_json(row[1])
        except (TypeError, ValueError):  # not what this am writes: computed again
            return None
        self._new[key] = row
        return found, gist

    def put(self, key: str, found: list[tuple[str, str, str | None, int | None, str]], gist: Gist | None) -> None:
        """Keep a file's own findings and gist."""
        self._new[key] = [found, gist]  # a gist is written as a JSON list
        self._changed = True

    def save(self) -> None:
        """Write the entries this check used (the rest are dropped) when anything changed; never raise."""
        if self.file is None or (not self._changed and len(self._new) == len(self._old)):
            return
        body = json.dumps(self._new, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        text = b"".join([_MAGIC, self.rules.encode("ascii"), b"\n", _digest(self.rules, body).encode("ascii"),
                         b"\n", body])
        # Two checks at once: each its own; one killed while writing leaves it to am doctor (its pid).
        temp = self.file.with_name(f"{self.file.name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as handle:
                handle.write(text)
            os.replace(temp, self.file)
        except OSError as err:  # derived data: the next check computes it again
            log.debug("am check memo not written: %s", err)
            try:
                temp.unlink()
            except OSError:
                pass


def _digest(rules: str, body: bytes) -> str:
    return hashlib.blake2b(rules.encode("ascii") + b"\0" + body, digest_size=32).hexdigest()


def _load(file: Path, rules: str) -> dict[str, Any]:
    """Return a memo file's entries, or none when it is missing, unreadable, another am's or damaged."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES:
            return {}
        with os.fdopen(os.dup(fd), "rb") as handle:
            text = handle.read()
    except OSError:
        return {}
    finally:
        os.close(fd)
    head, _, rest = text.partition(b"\n")
    stamp, _, rest = rest.partition(b"\n")
    digest, _, body = rest.partition(b"\n")
    if head + b"\n" != _MAGIC or stamp != rules.encode("ascii") or digest != _digest(rules, body).encode("ascii"):
        return {}
    try:
        entries = json.loads(body)
    except ValueError:
        return {}
    return entries if isinstance(entries, dict) else {}


def fingerprint() -> str:
    """Return a hash of what decides a file's own findings: am's rule modules and schemas, Python, the libraries."""
    import importlib.util

    from am.records.schemas import load_schema

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.blake2b(sys.version.encode(), digest_size=16)
    try:
        modules = sorted((package / "records").glob("*.py")) + [package / m for m in _RULE_MODULES]
        for module in modules:
            digest.update(module.name.encode() + b"\0" + module.read_bytes() + b"\0")
        for rtype in ("topic", "fact", "relation"):
            digest.update(json.dumps(load_schema(rtype), sort_keys=True).encode() + b"\0")
    except OSError:  # no source to hash (a frozen build): nothing is kept that another build could read
        digest.update(os.urandom(16))
    listed: dict[str, list[str]] = {}
    for module_name, dist in _LIBRARIES:
        spec = importlib.util.find_spec(module_name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            digest.update(f"{module_name}:-\0".encode())
            continue
        site = os.path.dirname(os.path.dirname(origin))
        if site not in listed:
            try:
                listed[site] = os.listdir(site)
            except OSError:
                listed[site] = []
        infos = sorted(n for n in listed[site] if n.lower().startswith(dist + "-") and n.endswith(".dist-info"))
        try:
            st = os.stat(origin)
            where = f"{origin}:{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            where = origin
        digest.update(f"{module_name}:{where}:{infos}\0".encode())
    return digest.hexdigest()
