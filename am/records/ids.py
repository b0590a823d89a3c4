"""Ids, slugs and sharded vault paths: the one strict id -> file name function.

An id is lowercase ASCII letters and digits in groups joined by one or two
hyphens (``project-alpha``, ``f-20260923-1630-3f0e99``,
``project-alpha--depends-on--tool-redis``). That alphabet has no ``.``, ``/``,
``\\``, ``:``, spaces, or anything Unicode can fold, so an id can never name a
path outside its folder, a case or NFC/NFD twin, or a reserved device name.

Decisions: docs/decisions/records.md.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from collections.abc import Callable
from functools import lru_cache
from pathlib import PurePosixPath

from am.errors import InvalidIdError, InvalidRecordError

__all__ = [
    "is_device_name",
    "ID_PATTERN",
    "MAX_ID_LENGTH",
    "RECORD_DIRS",
    "VAULT_FILE",
    "check_id",
    "is_valid_id",
    "slugify",
    "topic_id",
    "new_fact_id",
    "relation_id",
    "record_path",
    "check_record_path",
    "readable_name",
    "readable_path",
    "parse_timestamp",
    "stored_moment",
    "format_timestamp",
]

ID_PATTERN = r"[a-z0-9]+(?:-{1,2}[a-z0-9]+)*"
_ID_RE = re.compile(rf"^{ID_PATTERN}\Z")  # \Z: "$" would allow a trailing newline
MAX_ID_LENGTH = 120
_SLUG_LENGTH = 60
# Device names Windows refuses in any case and with any extension.
_RESERVED = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)
RECORD_DIRS = {"topic": "topics", "fact": "facts", "relation": "relations"}
VAULT_FILE = PurePosixPath(".am/vault.yml")  # the vault's committed settings
_KIND_OF_FOLDER = {folder: kind for kind, folder in RECORD_DIRS.items()}


def is_device_name(name: str) -> bool:
    """Return whether a file name is one Windows will not check out (CON, nul.txt, com1.jsonl ...)."""
    return name.lower().split(".")[0] in _RESERVED


def folder_problem(path: str | None, rtype: str) -> str | None:
    """Return why a record of type ``rtype`` may not live at ``path``, or None.

    A record's kind must match its folder: only facts under ``facts/``, topics
    under ``topics/``, relations under ``relations/`` (anywhere below them). A
    file under ``facts/`` declaring ``type: topic`` with an existing topic's id
    would otherwise shadow that topic (issue 14). Paths outside the three
    folders (a test's ``x.md``) are not judged.
    """
    if not path:
        return None
    top = path.replace("\\", "/").split("/", 1)[0]
    kind = _KIND_OF_FOLDER.get(top)
    if kind is None or kind == rtype or rtype not in RECORD_DIRS:
        return None
    return f"a {rtype} under {top}/, where am reads only {kind}s; move it to {RECORD_DIRS[rtype]}/"


def is_valid_id(value: object) -> bool:
    """Return whether ``value`` is a well-formed record id."""
    return (
        isinstance(value, str)
        and len(value) <= MAX_ID_LENGTH
        and _ID_RE.match(value) is not None
        and value not in _RESERVED
    )


def check_id(value: object, *, field: str = "id", path: str | None = None) -> str:
    """Return ``value`` if it is a well-formed id, else raise InvalidIdError."""
    if is_valid_id(value):
        assert isinstance(value, str)
        return value
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise InvalidIdError(
        f"{shown} is not a valid id",
        path=path,
        field=field,
        hint=(
            "use lowercase ASCII letters and digits joined by '-' "
            f"(at most {MAX_ID_LENGTH} characters, not a device name), e.g. project-alpha"
        ),
    )


def slugify(title: str) -> str:
    """Turn a title into a slug; a title with no ASCII gets a short stable hash."""
    folded = unicodedata.normalize("NFKD", title)
    ascii_text = folded.encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    if len(slug) > _SLUG_LENGTH:
        slug = slug[:_SLUG_LENGTH].rstrip("-")
    if not slug or slug in _RESERVED:
        # Stable across machines: depends only on the NFC form of the title.
        import hashlib  # imported here: OpenSSL's start-up is paid only when a slug needs it

        digest = hashlib.sha1(unicodedata.normalize("NFC", title).encode("utf-8")).hexdigest()
        slug = f"t{digest[:8]}"
    return slug


def topic_id(kind: str, title: str) -> str:
    """Return the id ``<kind>-<slug>`` for a new topic."""
    return check_id(f"{kind}-{slugify(title)}")


def new_fact_id(now: datetime) -> str:
    """Return a time-sortable, collision-safe fact id such as ``f-20260923-1630-3f0e99``, its minute UTC's.

    Drawn from UTC, never the machine's zone: ids written at the same moment on
    clones in Tokyo and Samoa name the same minute and sort by time together.
    """
    import secrets  # imported by the writes that need it, not by every command

    return f"f-{now.astimezone(UTC):%Y%m%d-%H%M}-{secrets.token_hex(3)}"


def relation_id(from_id: str, rel: str, to_id: str) -> str:
    """Return the id ``<from>--<rel>--<to>`` of a relation."""
    return check_id(f"{from_id}--{rel}--{to_id}", field="relation id")


def parse_timestamp(value: str, *, field: str = "created", path: str | None = None) -> datetime:
    """Parse an ISO 8601 date or date-time as written in frontmatter or a session log, as an aware moment.

    The one rule for stored times (docs/decisions/records.md#a-stored-time-without-an-offset-is-utc): a date or date-time without an offset is UTC,
    so it names the same moment on every machine, whatever time zone built the cache or asks.
    """
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidRecordError(
            f"{value!r} is not an ISO 8601 date or date-time",
            path=path,
            field=field,
            hint="write it like 2026-09-23T12:00:00+08:00 or 2026-09-23",
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def stored_moment(value: str | None) -> datetime | None:
    """Read a stored time by parse_timestamp's rule (no offset: UTC); None when missing or unreadable."""
    if not value:
        return None
    try:
        return parse_timestamp(value)
    except InvalidRecordError:
        return None


def format_timestamp(moment: datetime) -> str:
    """Format a moment the way am writes it: ISO 8601, seconds, with offset."""
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.isoformat(timespec="seconds")


def record_path(record_type: str, record_id: str, created: str | None) -> PurePosixPath:
    """Return the vault-relative path am writes a new record to."""
    return PurePosixPath(record_file(record_type, record_id, created))


def record_file(record_type: str, record_id: str, created: str | None) -> str:
    """Return ``record_path`` as text (no path object: ``am check`` asks it of every file)."""
    check_id(record_id)
    if record_type == "topic":
        return f"topics/{record_id}.md"
    if created is None:
        raise InvalidRecordError("is required to place the file", field="created")
    return f"{_dated_folder(record_type, created)}/{record_id}.md"


@lru_cache(maxsize=512)
def _dated_folder(record_type: str, created: str) -> str:
    """The folder of a fact or relation created then (an import's records mostly share a few days)."""
    day = parse_timestamp(created)
    if record_type == "fact":
        return f"facts/{day:%Y/%m/%d}"
    if record_type == "relation":
        return f"relations/{day:%Y/%m}"
    raise InvalidRecordError(f"unknown record type {record_type!r}", field="type")


_SAFE_PART = re.compile(r"^[^\x00-\x1f\x7f/\\:]+\Z")


def check_record_path(path: PurePosixPath | str) -> PurePosixPath:
    """Return ``path`` if it is a safe vault-relative record path, else raise."""
    p = PurePosixPath(path)
    parts = p.parts
    if (
        p.is_absolute()
        or not parts
        or parts[0] not in RECORD_DIRS.values()
        or not p.name.endswith(".md")
        or any(part in ("", ".", "..") or part.startswith(".") for part in parts)
        or any(_SAFE_PART.match(part) is None for part in parts)
        or any(is_device_name(part) for part in parts)
    ):
        raise InvalidRecordError(
            f"{str(path)!r} is not a safe record path",
            hint="records live in topics/, facts/ or relations/ as .md files",
        )
    return p


# Characters Obsidian refuses in a file name, and those that are unsafe on some system.
_UNREADABLE = re.compile(r'[\x00-\x1f\x7f*"\\/<>:|?#^\[\]\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]')


def readable_name(title: str) -> str | None:
    """Return a file name stem Obsidian shows as the title (``Li Wei``), or None when the title cannot be one."""
    stem = " ".join(_UNREADABLE.sub(" ", unicodedata.normalize("NFC", title)).split()).strip(". ")
    if len(stem.encode("utf-8")) > 180:
        stem = stem.encode("utf-8")[:180].decode("utf-8", "ignore").rstrip(". ")
    if not stem or is_device_name(stem) or stem.startswith("-"):
        return None
    return stem


def readable_path(path: PurePosixPath, title: str, *, exists: Callable[[PurePosixPath], bool]) -> PurePosixPath:
    """Return ``path`` renamed after ``title`` in the same folder, unless that name is unusable or taken.

    Names are compared case-insensitively (as Obsidian, macOS and Windows do),
    so a new file never shadows another note's link.
    """
    stem = readable_name(title)
    if stem is None:
        return path
    candidate = path.with_name(f"{stem}.md")
    try:
        check_record_path(candidate)
    except InvalidRecordError:
        return path
    if exists(candidate) or any(exists(path.with_name(n)) for n in {f"{stem.lower()}.md", f"{stem.upper()}.md"}):
        return path
    return candidate
