"""The people's window: `am serve`, a read-only web view of the vault on 127.0.0.1, and `am graph --format html` (a door).

``views`` answers each page from the same library calls as the CLI (the
slice, ``am.packs.graph``, the audit log, the cache's status) and writes
nothing; ``server`` serves them on the MCP SDK's web stack (starlette and
uvicorn, imported only when a server starts) with every route a GET and Host
and Origin checked; ``export`` writes the self-contained graph file; the page,
its script and stylesheet are plain files in ``static/`` (read by ``files``), shipped in the
package, and fetch nothing from the network.

May import: the facade (``am.vault``), every library floor, ``am.errors``, starlette and uvicorn
(only inside ``server``, only when a server starts).
Must not import: ``am.cli`` or any other door (``am.mcp``, ``am.sync``, ...); click; anything that writes.

Decisions: docs/decisions/web.md.
"""
