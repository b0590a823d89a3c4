"""One problem ``am check`` found in one file: what every pass of the check reports (check, checklinks, worldcheck).

Decisions: docs/decisions/upkeep.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Issue"]


@dataclass(frozen=True)
class Issue:
    """One problem found in one file."""

    severity: str
    code: str
    path: str
    message: str
    field: str | None = None
    line: int | None = None

    def describe(self) -> str:
        """Return the issue as one line for people."""
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        field = f" field '{self.field}':" if self.field else ""
        return f"{self.severity}: {where}:{field} {self.message} [{self.code}]"

    def to_json(self) -> dict[str, Any]:
        """Return the stable JSON shape of the issue."""
        return asdict(self)
