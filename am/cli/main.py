"""The `am` command: global options, error handling, and the command groups.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import gc

# A command allocates mostly what lives until it exits (modules, classes, the records it
# prints): a young-generation collection every 700 objects costs a read command 5-10 ms
# and finds nothing. Collect every 50,000 instead (before click's import, the biggest);
# long jobs such as a rebuild are still collected.
gc.set_threshold(50_000, 10, 10)

import logging
import os
import sys

import click

from am import __version__
from am.cli.context import Options
from am.errors import AmError, UsageError, storage_error


class _WarningHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"warning: {record.getMessage()}", err=True)


# The modules that define commands without exporting COMMANDS, and those commands.
_FIXED = {"vaults": ("init", "vault", "demo"), "topic": ("topic",), "fact": ("fact",), "relation": ("relation",)}
# Where each command is defined, so that a run imports only its own module (start-up time, PERF.md).
# A hint, not a registry: a name missing here (a new am/cli/cmd_*.py) is found by importing them all.
_HOMES = {
    "init": "vaults", "vault": "vaults", "demo": "vaults", "topic": "topic", "fact": "fact",
    "relation": "relation", "log": "cmd_audit", "history": "cmd_audit", "blame": "cmd_audit",
    "undo": "cmd_audit", "check": "cmd_check", "hooks": "cmd_hooks", "hook": "cmd_hooks",
    "recover": "cmd_recover", "doctor": "cmd_recover", "stale": "cmd_worlds", "why": "cmd_worlds", "search": "cmd_search",
    "index": "cmd_search", "slice": "cmd_slice", "repo": "cmd_slice", "now": "cmd_now",
    "mcp": "cmd_mcp", "setup": "cmd_mcp", "sync": "cmd_sync", "merge": "cmd_sync", "merge-driver": "cmd_sync",
    "import": "cmd_io", "export": "cmd_io", "graph": "cmd_web", "serve": "cmd_web",
    "obsidian": "cmd_obsidian",
    "ingest": "cmd_sessions", "propose": "cmd_sessions", "review": "cmd_review",
    "stats": "cmd_stats", "today": "cmd_stats", "day": "cmd_stats", "diff": "cmd_diff",
    "assert": "cmd_assert", "due": "cmd_assert", "coverage": "cmd_assert", "purge": "cmd_purge",
    "clean": "cmd_clean",
}


def _module_commands(name: str) -> list[click.Command]:
    import importlib

    module = importlib.import_module(f"am.cli.{name}")
    if name in _FIXED:
        return [getattr(module, attr) for attr in _FIXED[name]]
    return list(getattr(module, "COMMANDS", ()))


class _LazyGroup(click.Group):
    """The `am` group: a command's module is imported when that command runs, or when all are listed."""

    _everything = False

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        if not self._everything:
            self._everything = True
            for name in self._module_names():
                self._table.update((command.name, command) for command in _module_commands(name) if command.name)
        return self._table

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._table = value

    @staticmethod
    def _module_names() -> list[str]:
        # The fixed modules, then every am/cli/cmd_*.py by name: a later module wins a shared name.
        import pkgutil

        import am.cli as package

        found = sorted(i.name for i in pkgutil.iter_modules(package.__path__) if i.name.startswith("cmd_"))
        return [*_FIXED, *found]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if not self._everything and cmd_name in _HOMES:
            found = {c.name: c for c in _module_commands(_HOMES[cmd_name])}.get(cmd_name)
            if found is not None:
                return found
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="am")
@click.option("--vault", "vault", envvar="AM_VAULT", metavar="NAME|PATH",
              help="The vault to use (default: $AM_VAULT, else the enclosing folder).")
@click.option("--actor", envvar="AM_ACTOR", metavar="NAME",
              help="Who is writing, recorded as the commit author (default: $AM_ACTOR, else git's user).")
@click.option("--vault-branch", "vault_branch", envvar="AM_VAULT_BRANCH", metavar="NAME",
              help="Read and write the vault's branch NAME (an agent's memory kept apart; fold it in with am merge).")
@click.pass_context
def cli(ctx: click.Context, vault: str | None, actor: str | None, vault_branch: str | None) -> None:
    """am - agent memory: what agents and people know about a project, kept in Git.

    Every change is one Git commit; `git log` audits it and `git revert` undoes it.

    Example: am demo /tmp/demo && cd /tmp/demo && am fact list
    """
    ctx.obj = Options(vault, actor, vault_branch)


def main(argv: list[str] | None = None) -> None:
    """Run the command line; turn every AmError into one line on stderr and its exit code."""
    try:
        code = _run(argv)
    finally:
        # Interpreter shutdown ends with full garbage collections that walk every object
        # still alive (all the modules imported): 10-20 ms a command. Everything am opened
        # is closed by now, and Python never promised to collect cycles at exit.
        gc.freeze()
    sys.exit(code)


def _run(argv: list[str] | None) -> int:
    logger = logging.getLogger("am")
    if not logger.handlers:
        logger.addHandler(_WarningHandler())
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    try:
        _check_arguments(sys.argv[1:] if argv is None else argv)
        _check_clock()
        code = cli.main(args=argv, prog_name="am", standalone_mode=False)
    except AmError as err:
        click.echo(f"Error: {err}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.exceptions.Exit as err:
        return err.exit_code
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except BrokenPipeError:
        return 0
    except OSError as err:  # the disk or file system refused something: one line, not a traceback
        failed = storage_error(err, "finish the command")
        click.echo(f"Error: {failed}", err=True)
        return failed.exit_code
    except Exception as err:
        sqlite3 = sys.modules.get("sqlite3")  # imported only by the cache (am/cache/index.py)
        if sqlite3 is None or not isinstance(err, sqlite3.Error):
            raise
        from am.cache.file import distrust_opened

        distrust_opened()  # the next command checks the cache, and moves it aside and rebuilds it if damaged
        damaged = AmError(f"the search cache failed ({err})",
                          hint="run the command again: it checks the cache and rebuilds it if it is damaged")
        click.echo(f"Error: {damaged}", err=True)
        return damaged.exit_code
    return code if isinstance(code, int) else 0


def _check_arguments(args: list[str]) -> None:
    """Refuse arguments that are not text (bytes that are not UTF-8 arrive as lone surrogates)."""
    for n, arg in enumerate(args, 1):
        if any("\udc80" <= ch <= "\udcff" for ch in arg):
            raise UsageError(f"argument {n} is not valid UTF-8 text",
                             hint="pass text in UTF-8 (check the terminal's locale, e.g. LANG=C.UTF-8)")


def _check_clock() -> None:
    """Refuse an $AM_NOW that is not a moment: it fixes the clock of every record time and time phrase."""
    from am.clock import now

    try:
        now()
    except ValueError:
        raise UsageError(f"$AM_NOW is {os.environ.get('AM_NOW')!r}, not an ISO 8601 date-time",
                         hint="set it like AM_NOW=2026-11-03T14:00:00+08:00, or unset it to use the clock") from None


if __name__ == "__main__":  # pragma: no cover
    main()
