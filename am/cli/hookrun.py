"""What a vault's Git hook shim runs: ``python -I -m am.cli.hookrun NAME [ARGS...]``, without click.

Git runs a hook as a new process on every commit (obsidian-git: on a timer),
so its start-up is most of its cost: this entry imports neither click nor the
command table, only the hook runner (``am.upkeep.hooks.run_vault_hook``),
which reads Git through the git CLI for pre-commit and post-commit. It does
what ``am hook NAME`` does (that hidden command stays for shims written by
older versions and for the ``am`` on PATH): the same output, the same exit
codes, an ``AmError`` as one line.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

# As in am/cli/main.py: a short process gains nothing from young-generation collections.
gc.set_threshold(50_000, 10, 10)

__all__ = ["main", "open_vault_for_hooks"]


def open_vault_for_hooks(where: str | Path | None = None, *, actor: str | None = None) -> Any:
    """Open a vault with the facade, imported only when a hook needs it (a clean pre-commit does not)."""
    from am.vault import Vault

    return Vault.open(where, actor=actor)


def main(argv: list[str] | None = None) -> None:
    """Run one vault hook named by the first argument; exit with its code."""
    from am.errors import AmError, storage_error
    from am.upkeep.hookfiles import VAULT_HOOKS
    from am.upkeep.hooks import run_vault_hook

    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in VAULT_HOOKS:
        sys.stderr.write(f"am: unknown hook {args[0] if args else ''!r}; am handles: {', '.join(VAULT_HOOKS)}\n")
        sys.exit(2)
    name = args[0]
    # Only post-rewrite gets data on stdin; reading it elsewhere could block on a terminal.
    stdin = sys.stdin.buffer.read() if name == "post-rewrite" and not sys.stdin.isatty() else b""
    try:
        code = run_vault_hook(name, args[1:], cwd=Path.cwd(), stdin=stdin, out=sys.stderr,
                              open_vault=open_vault_for_hooks)
    except AmError as err:
        sys.stderr.write(f"Error: {err}\n")
        code = err.exit_code
    except OSError as err:  # the disk or file system refused something: one line, not a traceback
        failed = storage_error(err, "finish the hook")
        sys.stderr.write(f"Error: {failed}\n")
        code = failed.exit_code
    sys.stderr.flush()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
