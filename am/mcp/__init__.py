"""The agents' door: an MCP server over the library, and `am setup` for agent clients (a door).

``tools`` holds the tools (JSON schemas, and thin calls into the same
``Vault`` methods and library functions as the CLI); ``server`` serves them
over stdio on the official MCP SDK, keeping each worker's vault open so warm
calls skip start-up; ``http`` serves Streamable HTTP on 127.0.0.1 with Host,
Origin and token checks; ``setup`` writes agent clients' MCP configuration and
instruction blocks, reversibly (``jsonedit`` and ``blocks`` do the edits).

May import: the facade (``am.vault``), every library floor, ``am.errors``, the ``mcp``
SDK and its web stack (only inside ``server`` and ``http``, only when a server starts).
Must not import: ``am.cli`` or any other door; click.

Decisions: docs/decisions/agents.md.
"""
