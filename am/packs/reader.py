"""What packs need of a vault, as a protocol, so that this floor never imports the facade above it.

Decisions: docs/decisions/packs.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from am.cache.index import Index
    from am.git import LazyStore
    from am.records.model import Record

__all__ = ["VaultReader", "VaultOpener"]


class VaultReader(Protocol):
    """A vault read by a slice: its name, settings, store, records and cache (``am.vault.Vault`` is one)."""

    root: Path
    store: LazyStore
    name: str
    settings: dict[str, Any]

    def iter_records(self, *, strict: bool = False) -> Iterator[tuple[PurePosixPath, Record]]: ...

    def get(self, record_id: str) -> tuple[PurePosixPath, Record]: ...

    def cache(self) -> Index | None: ...

    def close(self) -> None: ...

    def __enter__(self) -> VaultReader: ...

    def __exit__(self, *exc: object) -> None: ...

    @classmethod
    def open(cls, where: str | Path | None = None, *, actor: str | None = None) -> VaultReader: ...


class VaultOpener(Protocol):
    """Opens another vault by path (``am.vault.Vault.open``): how a pack follows a cross-vault link."""

    def __call__(self, where: str | Path | None = None, *, actor: str | None = None) -> VaultReader: ...
