"""The per-machine registry ($AM_HOME/registry.yml): vault names and code-repo clones.

Paths differ between machines, so this file is never inside a vault.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from am.errors import InvalidRecordError, NotFoundError
from am.records.frontmatter import MAX_FRONTMATTER_BYTES, fast_load_tables, strict_load
from am.records.ids import check_id

__all__ = ["Registry", "am_home"]


def am_home() -> Path:
    """Return $AM_HOME, default ~/.am."""
    return Path(os.environ.get("AM_HOME") or Path.home() / ".am").expanduser()


@dataclass
class Registry:
    """Names of vaults and code repositories known on this machine."""

    path: Path
    vaults: dict[str, str] = field(default_factory=dict)
    repos: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, home: Path | None = None) -> Registry:
        """Read the registry; a missing file is an empty registry."""
        path = (home or am_home()) / "registry.yml"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path)
        # What _save wrote is read without PyYAML (a read command need not import it);
        # anything else, hand edits included, goes through the strict loader.
        data: dict[str, Any] | None = fast_load_tables(text) if len(text) <= MAX_FRONTMATTER_BYTES // 4 else None
        if data is None:
            data = strict_load(text, path=str(path)) if text.strip() else {}
        vaults = data.get("vaults") or {}
        repos = data.get("repos") or {}
        if not isinstance(vaults, dict) or not isinstance(repos, dict):
            raise InvalidRecordError("vaults and repos must be mappings of name to path", path=str(path))
        return cls(path, {str(k): str(v) for k, v in vaults.items()}, {str(k): str(v) for k, v in repos.items()})

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.parent / ".registry.flock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _save(self) -> None:
        from am.records.frontmatter import safe_dump

        # One entry a line however long the path (the fast path of load reads exactly that).
        text = safe_dump({"vaults": self.vaults, "repos": self.repos}, allow_unicode=True, sort_keys=True,
                         width=1 << 30)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)

    def add_vault(self, name: str, path: Path) -> None:
        """Register a vault name for a path (re-registering a name moves it)."""
        self._put("vaults", name, path)

    def add_repo(self, name: str, path: Path) -> None:
        """Register a code repository name for a local clone."""
        self._put("repos", name, path)

    def _put(self, table: str, name: str, path: Path) -> None:
        check_id(name, field=f"{table[:-1]} name")
        with self._locked():
            # Re-read under the lock so two registrations at once both land.
            fresh = Registry.load(self.path.parent)
            getattr(fresh, table)[name] = str(path)
            fresh._save()
            setattr(self, table, getattr(fresh, table))

    def vault_path(self, name: str) -> Path:
        """Return the path of a registered vault."""
        if name not in self.vaults:
            known = ", ".join(sorted(self.vaults)) or "none yet"
            raise NotFoundError(f"no vault named {name!r} (known: {known})", hint="register it: am vault add NAME PATH")
        return Path(self.vaults[name])
