"""The `am` command: global options, error handling, and the command groups."""

from __future__ import annotations

import logging
import sys

import click

from am import __version__
from am.cli.context import Options
from am.errors import AmError


class _WarningHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"warning: {record.getMessage()}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="am")
@click.option("--vault", "vault", envvar="AM_VAULT", metavar="NAME|PATH",
              help="The vault to use (default: $AM_VAULT, else the enclosing folder).")
@click.option("--actor", envvar="AM_ACTOR", metavar="NAME",
              help="Who is writing, recorded as the commit author (default: $AM_ACTOR, else git's user).")
@click.pass_context
def cli(ctx: click.Context, vault: str | None, actor: str | None) -> None:
    """am - agent memory: what agents and people know about a project, kept in Git.

    Every change is one Git commit; `git log` audits it and `git revert` undoes it.

    Example: am demo /tmp/demo && cd /tmp/demo && am fact list
    """
    ctx.obj = Options(vault, actor)


def _register() -> None:
    from am.cli import fact, relation, topic, vaults

    for command in (vaults.init, vaults.vault, vaults.demo, topic.topic, fact.fact, relation.relation):
        cli.add_command(command)
    # Further command groups live in am/cli/cmd_*.py, each exporting COMMANDS.
    import importlib
    import pkgutil

    import am.cli as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("cmd_"):
            module = importlib.import_module(f"am.cli.{info.name}")
            for command in getattr(module, "COMMANDS", ()):
                cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> None:
    """Run the command line; turn every AmError into one line on stderr and its exit code."""
    logger = logging.getLogger("am")
    if not logger.handlers:
        logger.addHandler(_WarningHandler())
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    try:
        code = cli.main(args=argv, prog_name="am", standalone_mode=False)
    except AmError as err:
        click.echo(f"Error: {err}", err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
