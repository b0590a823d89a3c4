"""The fact filters' options (--tag, --confidence, --pinned, --provenance, --session, --actor), for every command
that lists or searches facts.

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

__all__ = ["fact_filter", "fact_filter_options", "search_filter_options"]


def fact_filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the fact filters to a command (as keyword arguments named filter_*)."""
    return _with_filters(func, session=True)


def search_filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The fact filters but --session: am search's --session searches the session logs (there, --provenance
    session:ID filters facts by session)."""
    return _with_filters(func, session=False)


def _with_filters(func: Callable[..., Any], *, session: bool) -> Callable[..., Any]:
    options = [
        click.option("--tag", "filter_tags", multiple=True, metavar="TAG",
                     help="Only facts with this tag (repeatable: all)."),
        click.option("--confidence", "filter_confidence", multiple=True, type=click.Choice(["high", "medium", "low"]),
                     help="Only facts of this confidence (repeatable: any)."),
        click.option("--pinned/--not-pinned", "filter_pinned", default=None, help="Only pinned (or unpinned) facts."),
        click.option("--provenance", "filter_provenance", default=None, metavar="P",
                     help="Only facts of this provenance (a prefix ending in ':' matches, e.g. session:)."),
    ]
    if session:
        options.append(click.option("--session", "filter_session", default=None, metavar="ID",
                                    help="Only facts from this session (provenance session:ID)."))
    options.append(click.option("--actor", "filter_actor", default=None, metavar="NAME",
                                help="Only facts whose first commit is this actor's (as am log names it)."))
    for option in reversed(options):
        func = option(func)
    return func


def fact_filter(values: dict[str, Any]) -> Any:
    """Build the filter from a command's filter_* arguments."""
    from am.upkeep.factfilter import FactFilter

    return FactFilter(tags=tuple(values.get("filter_tags") or ()), confidence=tuple(values.get("filter_confidence") or ()),
                      pinned=values.get("filter_pinned"), provenance=values.get("filter_provenance"),
                      session=values.get("filter_session"), actor=values.get("filter_actor"))
