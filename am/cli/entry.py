"""The `am` program's entry: a no-op `am sync` answered without click, everything else by am.cli.main.

A process's start-up is most of a no-op sync (PERF.md): click and the facade
cost more than the one exchange with the remote such a sync needs. So the
plainest form, ``am [--vault V] sync [REMOTE]``, first asks the remote for its
branch tip with ``am.git.program.transport`` alone (``git ls-remote``: no click, no
facade, no pygit2, no dataclasses or typing) in the vault found the way
``Vault.open`` finds it; when the remote's tip, the remote-tracking ref and
the branch are one commit (nothing to fetch, nothing to push), it prints the
line ``am sync`` prints and ends. Anything else (other options, a vault found
through the registry or a code repository, a vault branch, work to do, a
remote that does not answer) goes to the click command line, which fetches,
so errors read as the command line's. Such a sync reads no settings
(``.am/vault.yml``): it changes nothing and only needs the Git directory.

Decisions: docs/decisions/sync.md.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # not typing's: this module is the start of every am process
if TYPE_CHECKING:
    from am.git.program.prewrite import Prewrite

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Run `am`: the fast path when it applies, else the click command line."""
    args = sys.argv[1:] if argv is None else argv
    code = _quick_sync(args)
    if code is None:
        code = _quick_merge(args)
    if code is None:
        from am.cli.main import main as full

        full(argv)
        return
    gc.freeze()  # as am.cli.main does: no collections at exit
    sys.exit(code)


def _quick_sync(args: list[str]) -> int | None:
    """Answer a no-op `am [--vault V] sync [REMOTE]`; its exit code, or None to hand the command to click."""
    vault_arg, rest = _split_vault(args)
    if not rest or rest[0] != "sync" or len(rest) > 2 or os.environ.get("AM_VAULT_BRANCH"):
        return None
    remote = rest[1] if len(rest) == 2 else None
    if remote is not None and (remote.startswith("-") or any("\udc80" <= ch <= "\udcff" for ch in remote)):
        return None
    root = _vault_root(vault_arg or os.environ.get("AM_VAULT") or None)
    if root is None:
        return None
    from am.errors import AmError
    from am.git.program import transport

    try:
        fetched = transport.settled(root, remote)
    except (AmError, OSError) as err:
        return _failed(err)
    if fetched is None:
        return None  # work to do, or an error to report: the full sync fetches and says so
    from am.cli.sync_text import up_to_date_line

    try:
        sys.stdout.write(up_to_date_line(f"{fetched[0]}/{fetched[1]}", fetched[2][:10]) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 0


def _quick_merge(args: list[str]) -> int | None:
    """Run `am [--vault V] merge BRANCH` without click (~50 ms of a process's start); None: hand it to click.

    The command line's ``merge`` is a door into ``am.sync.merge_branch`` that
    prints ``report_lines``; this does the same, with the same vault (found as
    ``Vault.open`` finds it, ``$AM_ACTOR`` as ``--actor``), the same lines and
    errors. Options (``--dry-run``, ``--format``, ``--help``), a vault found
    through the registry, a vault branch: click's.
    """
    vault_arg, rest = _split_vault(args)
    if len(rest) != 2 or rest[0] != "merge" or rest[1].startswith("-") or os.environ.get("AM_VAULT_BRANCH"):
        return None
    if any("\udc80" <= ch <= "\udcff" for ch in rest[1]):
        return None
    root = _vault_root(vault_arg or os.environ.get("AM_VAULT") or None)
    if root is None:
        return None
    from am.git.program import prewrite

    # The files the merge will bring are written ahead by a helper while this process imports and plans.
    ahead = prewrite.start(str(root), f"refs/heads/{rest[1]}")
    try:
        return _merge_now(root, rest[1], ahead)
    finally:
        if ahead is not None:
            ahead.close()


def _merge_now(root: Path, branch: str, ahead: Prewrite | None) -> int:
    gc.set_threshold(50_000, 10, 10)  # as am.cli.main: a command's objects live until it exits
    import logging

    from am.errors import AmError

    class _Warnings(logging.Handler):  # warnings read as the command line's (am.cli.main._WarningHandler)
        def emit(self, record: logging.LogRecord) -> None:
            sys.stderr.write(f"warning: {record.getMessage()}\n")

    logger = logging.getLogger("am")
    if not logger.handlers:
        logger.addHandler(_Warnings())
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    try:
        from am.cli.sync_text import report_lines
        from am.sync import merge_branch
        from am.vault import Vault

        with Vault.open(root, actor=os.environ.get("AM_ACTOR") or None) as vault:
            report = merge_branch(vault, branch, ahead=ahead)
        lines = report_lines(report)
    except (AmError, OSError) as err:
        return _failed(err)
    try:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return 0


def _split_vault(args: list[str]) -> tuple[str | None, list[str]]:
    """Take a leading ``--vault V`` / ``--vault=V`` off the arguments: (V or None, the rest)."""
    if args and args[0].startswith("--vault="):
        return args[0].removeprefix("--vault="), args[1:]
    if len(args) >= 2 and args[0] == "--vault":
        return args[1], args[2:]
    return None, args


def _failed(err: Exception) -> int:
    """Say an AmError or an OSError as the command line does; its exit code."""
    from am.errors import AmError, storage_error

    if isinstance(err, AmError):
        failed = err
    elif isinstance(err, OSError):
        failed = storage_error(err, "finish the command")
    else:  # pragma: no cover - the callers catch only these two
        raise err
    sys.stderr.write(f"Error: {failed}\n")
    return failed.exit_code


def _vault_root(where: str | None) -> Path | None:
    """The vault's folder as Vault.open finds it from a path or the working folder; None: ask Vault.open."""
    if where is None:
        start = Path.cwd().resolve()
        return next((f for f in (start, *start.parents) if (f / ".am" / "vault.yml").is_file()), None)
    if any("\udc80" <= ch <= "\udcff" for ch in where):
        return None
    candidate = Path(where).expanduser()
    return candidate.resolve() if (candidate / ".am" / "vault.yml").is_file() else None


if __name__ == "__main__":  # pragma: no cover
    main()
