"""The page's files, shipped in the package (am/web/static/): what ``am serve`` serves and an export inlines.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["STATIC_FILES", "static_text"]

STATIC_FILES = {"app.js": "text/javascript", "graph.js": "text/javascript", "style.css": "text/css",
                "index.html": "text/html"}


def static_text(name: str) -> str:
    """Return one of the page's files, shipped in the package (am/web/static/)."""
    return resources.files("am.web").joinpath("static", name).read_text(encoding="utf-8")
