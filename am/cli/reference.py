"""Render the CLI reference (docs/cli.md) from the commands' own --help.

Run ``python -m am.cli.reference > docs/cli.md`` after changing a command; a
test fails when the page and the help drift apart.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import click

from am.cli.main import cli

__all__ = ["render_reference", "iter_commands"]


def iter_commands(group: click.Group = cli, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Return (path, command) for every visible command, depth first, sorted by name."""
    out: list[tuple[tuple[str, ...], click.Command]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        path = prefix + (name,)
        out.append((path, command))
        if isinstance(command, click.Group):
            out.extend(iter_commands(command, path))
    return out


def _root() -> click.Context:
    # The same context settings as a real run (e.g. -h as well as --help):
    # click caches a command's help option the first time any context asks.
    settings = {**cli.context_settings, "terminal_width": 100, "max_content_width": 100}
    return click.Context(cli, info_name="am", **settings)


def _help(path: tuple[str, ...], command: click.Command) -> str:
    ctx = _root()
    for name in path[:-1]:
        group = ctx.command
        assert isinstance(group, click.Group)
        ctx = click.Context(group.commands[name], parent=ctx, info_name=name, terminal_width=100,
                            max_content_width=100)
    ctx = click.Context(command, parent=ctx, info_name=path[-1], terminal_width=100, max_content_width=100)
    return command.get_help(ctx)


def render_reference() -> str:
    """Return the Markdown CLI reference."""
    parts = [
        "# Command-line reference\n",
        "Generated from `am ... --help` by `python -m am.cli.reference > docs/cli.md`;",
        "a test keeps this page and the help in step.\n",
        "```text",
        cli.get_help(_root()),
        "```\n",
    ]
    for path, command in iter_commands():
        parts += [f"## am {' '.join(path)}\n", "```text", _help(path, command), "```\n"]
    return "\n".join(parts)


if __name__ == "__main__":  # pragma: no cover
    click.echo(render_reference(), nl=False)
