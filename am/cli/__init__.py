"""The command line: thin click commands over the Vault facade (a door).

Each command parses its arguments into values (``FactDraft``, ``SliceRequest``),
calls one library function or ``Vault`` method, and renders the result; one
place (``main.py``) turns an ``AmError`` into ``Error: ...`` and its exit code.

May import: everything in am/ (the facade, every library floor, the other doors to wire their commands), click.
Must not import: nothing in am/ imports this package; click stays here.

Decisions: docs/decisions/vault.md.
"""
