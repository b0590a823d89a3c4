"""am — agent memory: what AI agents and people know about their projects, kept in Git.

Decisions: docs/decisions/index.md.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
