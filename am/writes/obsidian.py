"""Making a vault an Obsidian vault: core Templates for records, settings that fit am, in one commit.

``setup_obsidian`` writes, only where nothing is there yet (a person's
settings are never overwritten; JSON settings files get missing keys only):

- ``templates/am-topic.md``, ``am-fact.md``, ``am-relation.md``: Obsidian core
  Templates (``{{title}}``, ``{{date:...}}``) that make a new note a valid record;
- ``.obsidian/templates.json``: the Templates plugin's folder;
- ``.obsidian/core-plugins.json``: the Templates plugin on (the other core
  plugins as Obsidian ships them, when the file is new);
- ``.obsidian/app.json``: ``.am/`` excluded from search and graph
  (``userIgnoreFilters``), wikilinks, and links updated when a file is renamed;
- ``.gitignore``: Obsidian's per-device window layout (``.obsidian/workspace.json``,
  ``workspace-mobile.json``), which Obsidian rewrites whenever a pane changes: kept
  out of Git, or obsidian-git commits it on every machine and each sync clashes on it;
- ``.am/vault.yml``: ``property_links: true`` (facts link their topics as
  ``"[[id]]"``, so Obsidian's graph joins them) and ``readable_names: true``
  (``am topic add`` names files after titles).

Decisions: docs/decisions/writes.md.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from am.errors import InvalidRecordError

if TYPE_CHECKING:
    from am.writes.writer import RecordWriter

__all__ = ["LAYOUT_FILES", "TEMPLATES", "obsidian_changes", "setup_obsidian"]

_CREATED = "\"{{date:YYYY-MM-DDTHH:mm:ssZ}}\""
TEMPLATES: dict[str, str] = {
    "templates/am-topic.md": f"""---
type: topic
# id: lowercase letters, digits and '-', e.g. person-li-wei; the file name may stay readable
id: "concept-{{{{date:YYYYMMDD-HHmmss}}}}"
kind: concept
title: "{{{{title}}}}"
aliases: []
tags: []
status: active
created: {_CREATED}
---
""",
    "templates/am-fact.md": f"""---
type: fact
id: "f-{{{{date:YYYYMMDD-HHmmss}}}}"
topics:
  - "[[project-x]]"
status: active
confidence: medium
provenance: human
created: {_CREATED}
---
One to three sentences that hold on their own.
""",
    "templates/am-relation.md": f"""---
type: relation
# id: <from>--<rel>--<to>; rel is one of: depends-on, part-of, belongs-to, authored-by, references,
# conflicts-with, supersedes
id: from-id--depends-on--to-id
rel: depends-on
from: "[[from-id]]"
to: "[[to-id]]"
status: active
created: {_CREATED}
---
""",
}

# Obsidian's core plugins as a new vault has them, with Templates on.
_CORE_PLUGINS = {
    "file-explorer": True, "global-search": True, "switcher": True, "graph": True, "backlink": True,
    "canvas": True, "outgoing-link": True, "tag-pane": True, "properties": True, "page-preview": True,
    "daily-notes": True, "templates": True, "note-composer": True, "command-palette": True,
    "editor-status": True, "bookmarks": True, "outline": True, "word-count": True, "file-recovery": True,
}
_SETTINGS: dict[str, dict[str, Any]] = {
    ".obsidian/templates.json": {"folder": "templates", "dateFormat": "YYYY-MM-DD", "timeFormat": "HH:mm"},
    ".obsidian/app.json": {"userIgnoreFilters": [".am/"], "useMarkdownLinks": False, "alwaysUpdateLinks": True},
}
_VAULT_SETTINGS = ("property_links: true", "readable_names: true")
# Obsidian's layout of one device's window: rewritten on every pane change, never shared (docs/obsidian.md).
LAYOUT_FILES = (".obsidian/workspace.json", ".obsidian/workspace-mobile.json")


def _json_with(current: bytes | None, wanted: dict[str, Any], path: str) -> bytes | None:
    """Return the JSON file with ``wanted``'s keys added where missing (None: nothing to add)."""
    if current is None:
        return (json.dumps(wanted, indent=2, ensure_ascii=False) + "\n").encode()
    try:
        data = json.loads(current.decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError):
        raise InvalidRecordError("is not valid JSON; am leaves it alone", path=path,
                                 hint="fix or remove it, then run am obsidian setup again") from None
    if not isinstance(data, dict):
        return None
    missing = {k: v for k, v in wanted.items() if k not in data}
    if not missing:
        return None
    data.update(missing)
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode()


def _core_plugins(current: bytes | None) -> bytes | None:
    if current is None:
        return (json.dumps(_CORE_PLUGINS, indent=2) + "\n").encode()
    try:
        data = json.loads(current.decode("utf-8") or "{}")
    except (UnicodeDecodeError, ValueError):
        return None
    if isinstance(data, list):  # the older form: a list of the enabled plugins
        return None if "templates" in data else (json.dumps([*data, "templates"], indent=2) + "\n").encode()
    if isinstance(data, dict) and "templates" not in data:  # a person's "templates": false stays
        data["templates"] = True
        return (json.dumps(data, indent=2) + "\n").encode()
    return None


def obsidian_changes(read: Any) -> dict[str, bytes]:
    """Return {path: new bytes} of what setup would write; ``read(path)`` gives a file's bytes or None."""
    out: dict[str, bytes] = {}
    for path, text in TEMPLATES.items():
        if read(path) is None:
            out[path] = text.encode()
    for path, wanted in _SETTINGS.items():
        new = _json_with(read(path), wanted, path)
        if new is not None:
            out[path] = new
    plugins = _core_plugins(read(".obsidian/core-plugins.json"))
    if plugins is not None:
        out[".obsidian/core-plugins.json"] = plugins
    ignore = read(".gitignore") or b""
    listed = {line.strip().lstrip("/") for line in ignore.decode("utf-8", "replace").splitlines()}
    unlisted = [p for p in LAYOUT_FILES if p not in listed]
    if unlisted:
        sep = b"" if not ignore or ignore.endswith(b"\n") else b"\n"
        out[".gitignore"] = ignore + sep + "".join(f"{p}\n" for p in unlisted).encode()
    settings = read(".am/vault.yml") or b""
    have = {line.split(":", 1)[0].strip() for line in settings.decode("utf-8", "replace").splitlines()}
    extra = [line for line in _VAULT_SETTINGS if line.split(":", 1)[0] not in have]
    if extra:
        sep = b"" if not settings or settings.endswith(b"\n") else b"\n"
        out[".am/vault.yml"] = settings + sep + "".join(f"{line}\n" for line in extra).encode()
    return out


def setup_obsidian(writer: RecordWriter) -> tuple[str | None, list[str]]:
    """Write what an Obsidian vault needs and is missing, in one commit; return (commit or None, paths)."""
    from am.git import Change

    store, files = writer.store, writer.files

    def read(path: str) -> bytes | None:
        try:
            data: bytes = (files.root / path).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return data

    from am.git import hash_blob

    writer.check_writable(())
    changes = obsidian_changes(read)
    skipped: list[str] = []
    for path in sorted(changes):
        current = read(path)
        if current is not None and hash_blob(current) != store.blob_id(path):
            skipped.append(path)  # a person's uncommitted settings: never written over
            del changes[path]
    if skipped:
        from am.errors import DirtyFileError

        raise DirtyFileError(f"{', '.join(skipped)} has uncommitted changes",
                             hint="commit them first (git add/commit), then run am obsidian setup again")
    if not changes:
        return None, []
    items = [Change(PurePosixPath(p), data, base=store.blob_id(p)) for p, data in sorted(changes.items())]
    message = writer.authorship.message("vault", "obsidian", [], subject="vault: set up for Obsidian (templates, settings)")
    with store.write_lock(op="vault.obsidian"):
        commit = store.commit(items, message=message, author=writer.authorship.author(), committer=writer.authorship.committer())
    files.settings = files.read_settings()
    return commit, sorted(changes)
