"""The per-machine registry ($AM_HOME/registry.yml): vault names, code-repo clones, and each repo's vault.

Paths differ between machines, so this file is never inside a vault. A name is
never re-pointed silently: registering a taken name for another path is an
error unless the caller says ``replace``.

Decisions: docs/decisions/vault.md.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from am.errors import CollisionError, InvalidRecordError, NotFoundError
from am.records.frontmatter import MAX_FRONTMATTER_BYTES, fast_load_tables, strict_load
from am.records.ids import check_id

__all__ = ["Registry", "am_home", "find_vault_root"]


def am_home() -> Path:
    """Return $AM_HOME, default ~/.am."""
    return Path(os.environ.get("AM_HOME") or Path.home() / ".am").expanduser()


@dataclass
class Registry:
    """Names of vaults and code repositories known on this machine."""

    path: Path
    vaults: dict[str, str] = field(default_factory=dict)
    repos: dict[str, str] = field(default_factory=dict)
    # Code-repo name -> the vault (by name) its facts live in: a clone or worktree finds its vault through it.
    repo_vaults: dict[str, str] = field(default_factory=dict)

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
        links = data.get("repo_vaults") or {}
        if not isinstance(vaults, dict) or not isinstance(repos, dict) or not isinstance(links, dict):
            raise InvalidRecordError("vaults, repos and repo_vaults must be mappings of name to path or name",
                                     path=str(path))
        return cls(path, {str(k): str(v) for k, v in vaults.items()}, {str(k): str(v) for k, v in repos.items()},
                   {str(k): str(v) for k, v in links.items()})

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.parent / ".registry.flock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _save(self) -> None:
        from am.records.frontmatter import safe_dump

        # One entry a line however long the path (the fast path of load reads exactly that).
        tables: dict[str, dict[str, str]] = {"vaults": self.vaults, "repos": self.repos}
        if self.repo_vaults:
            tables["repo_vaults"] = self.repo_vaults
        text = safe_dump(tables, allow_unicode=True, sort_keys=True, width=1 << 30)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)

    def add_vault(self, name: str, path: Path, *, replace: bool = False) -> None:
        """Register a vault name for a path; a name taken by another path needs ``replace``."""
        self._put("vaults", name, path, replace=replace)

    def check_vault_name(self, name: str, path: Path) -> None:
        """Raise CollisionError if ``name`` is registered for a vault other than ``path``."""
        _refuse_taken("vault", name, self.vaults.get(name), path)

    def name_of(self, root: Path, own: str) -> str:
        """The name this machine knows the vault at ``root`` by (``own``: its .am/vault.yml name, when free).

        Two clones of one vault share one ``own`` name; linking a code repo
        to it would point at whichever clone holds the name, so a clone
        registered under another name is linked by that name, and one that
        is not registered while its own name names another folder is refused.
        """
        for name, path in sorted(self.vaults.items()):
            if _same(path, root):
                return name
        taken = self.vaults.get(own)
        if taken is not None:
            raise CollisionError(f"vault name {own!r} is registered for {taken}, not for this clone {root}",
                                 hint=f"register this clone under a name of its own first: am vault add NAME {root}")
        return own

    def add_repo(self, name: str, path: Path, *, vault: str | None = None, replace: bool = False) -> None:
        """Register a code repository name for a local clone (and the vault it belongs to)."""
        self._put("repos", name, path, replace=replace, vault=vault)

    def remove_vault(self, name: str) -> str:
        """Forget a vault name (its files stay); return the path it named."""
        return self._drop("vaults", name)

    def remove_repo(self, name: str) -> str:
        """Forget a code repository name and its vault link (the clone stays); return the path it named."""
        return self._drop("repos", name)

    def _put(self, table: str, name: str, path: Path, *, replace: bool, vault: str | None = None) -> None:
        check_id(name, field=f"{table[:-1]} name")
        with self._locked():
            # Re-read under the lock so two registrations at once both land.
            fresh = Registry.load(self.path.parent)
            entries = getattr(fresh, table)
            if not replace:
                _refuse_taken(table[:-1], name, entries.get(name), path)
            entries[name] = str(path)
            if table == "repos" and vault is not None:
                fresh.repo_vaults[name] = vault
            fresh._save()
            self.vaults, self.repos, self.repo_vaults = fresh.vaults, fresh.repos, fresh.repo_vaults

    def _drop(self, table: str, name: str) -> str:
        with self._locked():
            fresh = Registry.load(self.path.parent)
            entries = getattr(fresh, table)
            if name not in entries:
                known = ", ".join(sorted(entries)) or "none"
                raise NotFoundError(f"no {table[:-1]} named {name!r} is registered (registered: {known})")
            old = str(entries.pop(name))
            if table == "repos":
                fresh.repo_vaults.pop(name, None)
            fresh._save()
            self.vaults, self.repos, self.repo_vaults = fresh.vaults, fresh.repos, fresh.repo_vaults
            return old

    def vault_path(self, name: str) -> Path:
        """Return the path of a registered vault."""
        if name not in self.vaults:
            known = ", ".join(sorted(self.vaults)) or "none yet"
            raise NotFoundError(f"no vault named {name!r} (known: {known})", hint="register it: am vault add NAME PATH")
        return Path(self.vaults[name])


def _same(old: str, new: Path) -> bool:
    """Return whether a registered path and a new one name the same folder."""
    try:
        return Path(old).expanduser().resolve() == new.expanduser().resolve()
    except OSError:
        return str(old) == str(new)


def _refuse_taken(noun: str, name: str, old: str | None, path: Path) -> None:
    """Raise CollisionError if ``name`` is registered for another folder than ``path``."""
    if old is not None and not _same(old, path):
        raise CollisionError(f"{noun} name {name!r} is already registered for {old}",
                             hint=f"pass --replace to point it at {path}, or choose another name")


def find_vault_root(start: Path) -> Path | None:
    """Return the nearest folder at or above ``start`` that holds a vault (``.am/vault.yml``)."""
    for folder in (start, *start.parents):
        if (folder / ".am" / "vault.yml").is_file():
            return folder
    return None
