"""Sessions: agents' raw logs kept losslessly, searched, and read by the clerk (DESIGN §11).

A door beside the CLI and the MCP server. ``am.records.sessionlog`` reads Claude Code and
Codex session logs and plain ``{ts, role, text}`` lines into metadata and
messages; ``redaction`` masks credentials in a log without rewriting the rest
of its bytes; ``ingest`` stores a log under ``sessions/YYYY/MM/DD/<id>.jsonl``
with a ``session`` topic, one commit a session; ``search`` finds session
lines; ``clerk`` turns a session into proposed facts (``pending-review``).

Floor: a door. May import: the facade (``am.vault``) and every library floor
(``am.upkeep``, ``am.packs``, ``am.worlds``, ``am.cache``, ``am.git``,
``am.records``, ``am.errors``, ``am.clock``, ``am.registry``).
Must not import: the other doors (``am.cli``, ``am.mcp``, ``am.sync``,
``am.io``), click, sqlite3, pygit2 (Git is reached through ``am.git``).

Decisions: docs/decisions/sessions.md.
"""
