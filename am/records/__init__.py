"""Records, pure: the model, parsing and rendering, frontmatter, links, ids and paths, schemas, secrets.

Floor 1, just above ``am.errors`` and ``am.clock``. Everything here is a pure
function of its inputs (no Git, no SQLite, no files read or written): a record
is text in and a frozen dataclass out, and back, byte for byte for files am
wrote. ``writes`` holds the values a write hands back and the value a fact
being written travels as (``FactDraft``).

May import: the standard library, PyYAML, markdown-it-py, jsonschema (lazily),
``am.errors``, ``am.clock``.
Must not import: any other ``am`` subpackage, pygit2, sqlite3, click.

Decisions: docs/decisions/records.md.
"""
