"""Which embedding backend this machine uses, and the one am ships: WordLlama's packaged model, offline.

A backend is code, so only the user's own configuration chooses it, never a vault
(someone else's files after a clone). In order:

1. ``$AM_EMBEDDINGS``;
2. ``embeddings:`` in ``$AM_HOME/config.yml``;
3. nothing said: ``wordllama`` when the ``am[semantic]`` extra is installed, else
   the vector level reports ``vector: not installed``.

A value is ``off`` (also ``none``, ``false``: no vector level), the name of an
entry point in the group ``am.embeddings`` of an installed package (am's own
``wordllama`` is one), or ``module:factory``. A factory takes no arguments and
returns either an **embedder** (``name``, ``embed(texts) -> array (n, dim)``: am
keeps the vectors in its cache and ranks them itself, fused with full text) or a
**search backend** (``name``, ``search(query, *, limit) -> [(id, score)]``: it
answers alone). A vault may only turn the level *off* (``embeddings: off`` in
``.am/vault.yml``); any other value there is ignored and the note says so.

The WordLlama embedder reads the weights (a float16 safetensors table, 32k x 256)
and the tokenizer file that the ``wordllama`` wheel ships, with numpy and
``tokenizers`` alone: ``WordLlama.load()`` looks for the tokenizer under the
wrong folder and then downloads it, and importing ``wordllama`` configures the
root logger. Nothing here ever opens a network connection. A text's vector is the
mean of its tokens' vectors, L2-normalised, as ``WordLlamaInference.embed(norm=True)``
computes it (tests/test_semantic_wordllama.py holds them equal). One query's vector
(``vector``, what ``am search`` ranks with) needs no numpy: its tokens' rows are read
from the weights file with ``struct``, their ids taught from the cache (``teach``).

Decisions: docs/decisions/recall.md.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import struct
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import zip_longest
from pathlib import Path
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "MACHINE_CONFIG", "BackendError", "WordLlamaEmbedder", "configured_backend",
           "load_backend", "is_embedder", "semantic_installed", "wordllama"]

ENTRY_POINT_GROUP = "am.embeddings"
MACHINE_CONFIG = "config.yml"  # in $AM_HOME: this machine's settings, never inside a vault
DEFAULT = "wordllama"
OFF = frozenset({"off", "none", "false", "no", "0", "disabled"})
INSTALL_HINT = "pip install 'am[semantic]'"


class BackendError(Exception):
    """The machine's configuration of a backend cannot be read."""


def _is_off(value: object) -> bool:
    return value is False or (isinstance(value, str) and value.strip().casefold() in OFF)


def configured_backend() -> tuple[str | None, str]:
    """Return the backend this machine's configuration names (None: nothing said), and where it was found.

    Only the user's own configuration counts: ``$AM_EMBEDDINGS``, else
    ``embeddings:`` in ``$AM_HOME/config.yml``. A vault is someone else's files
    (a clone, a pull request), so nothing in it may choose code to run.
    """
    spec = os.environ.get("AM_EMBEDDINGS", "").strip()
    if spec:
        return spec, "$AM_EMBEDDINGS"
    from am.registry import am_home

    path = am_home() / MACHINE_CONFIG
    where = f"$AM_HOME/{MACHINE_CONFIG}"
    try:
        with open(path, "rb") as handle:
            data = handle.read(65536 + 1)
    except FileNotFoundError:
        return None, where
    except OSError as err:
        raise BackendError(f"cannot read {path} ({err.strerror})") from None
    from am.errors import InvalidRecordError
    from am.records.frontmatter import strict_load

    try:
        if len(data) > 65536:
            raise InvalidRecordError("larger than 64 KiB", path=str(path))
        settings = strict_load(data.decode("utf-8"), path=str(path)) if data.strip() else {}
    except (InvalidRecordError, UnicodeDecodeError) as err:
        raise BackendError(f"cannot read {path} ({err})") from None
    value = settings.get("embeddings") if isinstance(settings, dict) else None
    if value is False:
        return "off", where
    return (str(value).strip() or None) if value else None, where


def semantic_installed() -> bool:
    """Return whether the ``am[semantic]`` extra's packages are importable (without importing them)."""
    from importlib.util import find_spec

    try:
        return all(find_spec(name) is not None for name in ("wordllama", "numpy", "tokenizers"))
    except (ImportError, ValueError):  # a finder that refuses the name: not installed, as far as am is concerned
        return False


def _factory(spec: str) -> Callable[[], Any]:
    """Return the factory a spec names: am's own (``wordllama``), an entry point of an installed package, or
    ``module[:factory]``."""
    if spec == DEFAULT:  # am's own entry point: reading every package's entry points costs a search ~50 ms
        return wordllama
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name == spec:
            return point.load()  # type: ignore[no-any-return]
    module_name, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module_name), attr or "backend")  # type: ignore[no-any-return]


def is_embedder(backend: object) -> bool:
    """Return whether a backend embeds texts (am keeps and ranks the vectors) rather than searching alone."""
    return callable(getattr(backend, "embed", None))


_LOADED: dict[str, Any] = {}  # spec -> backend: a process loads a model once (an agent server asks many times)
_LOCK = threading.Lock()


def load_backend(settings: Mapping[str, Any] | None = None) -> tuple[Any | None, str]:
    """Return the backend this machine's configuration names (or None) and a note saying what happened.

    ``settings`` are the vault's (``.am/vault.yml``): ``embeddings: off`` there turns the
    vector level off; any other value is never loaded, only mentioned in the note.
    Never raises: a backend that cannot load leaves the note and the full-text level.
    """
    planted = (settings or {}).get("embeddings")
    if planted is not None and _is_off(planted):
        return None, "vector: off (.am/vault.yml)"
    ignored = (f"; .am/vault.yml names {str(planted)[:80]!r}, which am never loads (a vault cannot choose code: "
               "set AM_EMBEDDINGS or embeddings: in $AM_HOME/config.yml)") if planted else ""
    try:
        spec, where = configured_backend()
    except BackendError as err:
        return None, f"vector: {err}{ignored}"
    if spec is not None and _is_off(spec):
        return None, f"vector: off ({where}){ignored}"
    if spec is None:
        if not semantic_installed():
            return None, f"vector: not installed ({INSTALL_HINT}){ignored}"
        spec, where = DEFAULT, "the am[semantic] extra"
    with _LOCK:
        backend = _LOADED.get(spec)
        if backend is None:
            try:
                backend = _factory(spec)()
            except Exception as err:  # noqa: BLE001 - a broken optional backend must never break a search
                reason = f"{type(err).__name__}: {err}"
                if spec == DEFAULT and isinstance(err, ImportError):
                    return None, f"vector: not installed ({INSTALL_HINT}; {reason}){ignored}"
                return None, f"vector: backend {spec} ({where}) failed to load ({reason}){ignored}"
            _LOADED[spec] = backend
    return backend, f"vector: {getattr(backend, 'name', spec)}{ignored}"


# ---------------------------------------------------------------- the WordLlama embedder

_WEIGHTS = "weights/l2_supercat_256.safetensors"
_TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
_CHUNK = 2000      # texts summed at a time (their pieces' rows: ~40k x 256 floats)
_MAX_TOKENS = 256  # a record's first 256 tokens make its vector (a fact is 1-3 sentences)
_PIECE = re.compile("\u2581*[^\u2581]+|\u2581+")
_SPECIAL = re.compile("(<unk>|<s>|</s>)")  # the tokenizer's added tokens: split out before normalising
_KINDS = ("F16", "F32")  # the weights' dtypes read


def _padded(groups: Sequence[Sequence[int]]) -> Any:
    """Return the groups as an int64 array (longest group x groups), -1 where a group has ended."""
    import numpy as np

    if not groups or not any(groups):
        return np.zeros((0, len(groups)), dtype=np.int64)
    return np.array(list(zip_longest(*groups, fillvalue=-1)), dtype=np.int64)


def _segment_sums(matrix: Any, padded: Any, dim: int) -> Any:
    """Return, for each column of ``padded`` (row numbers, -1: none), the sum of those rows of ``matrix``.

    Position by position (every group's first row, then second, ...): vectorised, and with no
    (members x dim) temporary; ``np.add.reduceat`` on axis 0 was ten times slower.
    """
    import numpy as np

    out = np.zeros((padded.shape[1], dim), dtype=np.float32)
    for row in padded:
        held = np.flatnonzero(row >= 0)
        out[held] += np.asarray(matrix[row[held]], dtype=np.float32)
    return out


def _pieces_of(text: str) -> list[str]:
    """Return a text's pieces as the tokenizer sees them (each stretch between added tokens normalised alone)."""
    out: list[str] = []
    for n, part in enumerate(_SPECIAL.split(text) if "<" in text else (text,)):
        if n % 2:
            out.append(part)
        elif part:
            out += _PIECE.findall("\u2581" + part.replace(" ", "\u2581"))
    return out


def _table_of(weights: Path) -> tuple[str, int, tuple[int, int]]:
    """Return the dtype, byte offset and shape of a safetensors file's embedding table, checked against the file
    (a garbage header's first 8 bytes, read as its size, asked for exabytes: "MemoryError")."""

    def refuse(why: str) -> ValueError:
        return ValueError(f"{weights} is not a safetensors file ({why}); "
                          "reinstall: pip install --force-reinstall wordllama")

    total = weights.stat().st_size
    with open(weights, "rb") as handle:
        head = handle.read(8)
        size = int.from_bytes(head, "little")
        if len(head) < 8 or not 2 <= size <= total - 8:
            raise refuse(f"its header claims {size} bytes; the file has {total}")
        try:
            entry = json.loads(handle.read(size))["embedding.weight"]
            kind, (start, end), (rows, dim) = str(entry["dtype"]), entry["data_offsets"], entry["shape"]
            start, end, rows, dim = int(start), int(end), int(rows), int(dim)
        except (ValueError, KeyError, TypeError, RecursionError):
            raise refuse("its header names no embedding.weight table") from None
    if kind not in _KINDS:
        raise ValueError(f"{weights}: unsupported dtype {kind}")
    if not 0 <= start <= end or end - start != rows * dim * (2 if kind == "F16" else 4) or rows < 1 or dim < 1:
        raise refuse(f"its table of {rows} x {dim} {kind} does not fit bytes {start}..{end}")
    if 8 + size + end > total:
        raise refuse(f"the table is cut short: it ends at byte {8 + size + end}; the file has {total}")
    return kind, 8 + size + start, (rows, dim)


class WordLlamaEmbedder:
    """WordLlama's static embeddings (``l2_supercat``, 256 dimensions) from the files its wheel ships.

    The tokenizer (Llama's BPE) normalises a text to ``▁`` + the text with each space
    a ``▁``, and no token of its vocabulary has a ``▁`` after another character: so
    a text's tokens are its pieces' tokens (a piece: a run of ``▁`` and what follows
    up to the next ``▁``), and each distinct piece is tokenised, and its vectors summed,
    once a process. A rebuild tokenises a few thousand distinct words, not every text.
    """

    def __init__(self, folder: Path, version: str) -> None:
        weights = folder / _WEIGHTS
        self.weights = weights
        self._kind, self._offset, self._shape = _table_of(weights)
        self._table: Any = None  # numpy's map of the table, made when numpy embeds
        self.folder = folder
        self._pieces: Any = None  # the tokenizer, read when a piece's ids are neither learned nor taught
        self._known: dict[str, list[int]] = {}  # piece -> its token ids (taught from a cache, or tokenised)
        self._row: dict[str, int] = {}    # piece -> its row in _sums and _counts (numpy's embed)
        self._sums: Any = None
        self._counts: Any = None
        self.dim = self._shape[1]
        self.name = f"wordllama l2_supercat_{self.dim} {version}"
        self._lock = threading.Lock()  # an agent server embeds from several threads; the piece table grows

    @property
    def table(self) -> Any:
        """The weights as a numpy array, mapped, not read: a query needs a few dozen rows of the 16 MB table."""
        if self._table is None:
            import numpy as np

            self._table = np.memmap(self.weights, dtype={"F16": np.float16, "F32": np.float32}[self._kind], mode="r",
                                    offset=self._offset, shape=self._shape)
        return self._table

    def _tokenizer(self) -> Any:
        """The tokenizer (a 1.8 MB file: ~0.1 s to read), read the first time a piece needs it."""
        if self._pieces is None:
            from tokenizers import Tokenizer, normalizers

            pieces = Tokenizer.from_file(str(self.folder / _TOKENIZER))  # a local file: never a download
            pieces.normalizer = normalizers.Sequence([])  # pieces come normalised
            pieces.no_padding()
            pieces.no_truncation()
            self._pieces = pieces
        return self._pieces

    def unknown_pieces(self, texts: Sequence[str]) -> list[str]:
        """Return the pieces of these texts whose token ids this process has not learned (nor been taught)."""
        known = self._known
        return [p for p in dict.fromkeys(p for t in texts for p in _pieces_of(t)) if p not in known]

    def piece_ids(self, texts: Sequence[str]) -> dict[str, list[int]]:
        """Return the token ids of every piece of these texts (learning them): for a cache to keep (``teach``)."""
        split = [_pieces_of(t) for t in texts]
        with self._lock:
            self._learn(p for pieces in split for p in pieces)
            known = self._known
            return {p: known[p] for pieces in split for p in pieces}

    def teach(self, known: Mapping[str, Sequence[int]]) -> None:
        """Take pieces' token ids that this model's tokenizer gave before (kept in a cache): no tokenizer needed."""
        with self._lock:
            for piece, ids in known.items():
                self._known.setdefault(piece, list(ids))

    def _learn(self, pieces: Iterable[str]) -> None:
        """Tokenise the pieces whose token ids are not known yet (hold the lock)."""
        new = [p for p in dict.fromkeys(pieces) if p not in self._known]
        if new:
            encoded = self._tokenizer().encode_batch(new, add_special_tokens=False)
            self._known.update((p, list(e.ids)) for p, e in zip(new, encoded))

    def _add(self, pieces: Iterable[str]) -> None:
        """Keep the sums of the tokens' vectors of pieces not summed yet (hold the lock; their ids are known)."""
        import numpy as np

        new = [p for p in dict.fromkeys(pieces) if p not in self._row]
        if not new:
            return
        ids = [self._known[p] for p in new]
        lengths = np.array([len(i) for i in ids], dtype=np.int64)
        sums = _segment_sums(self.table, _padded(ids), self.dim)
        base = len(self._row)
        room_now = 0 if self._counts is None else len(self._counts)
        if base + len(new) > room_now:  # room doubles: a new word in a query copies nothing
            room = max(2 * room_now, base + len(new), 1024)
            grown = np.zeros((room, self.dim), dtype=np.float32)
            counts = np.zeros(room, dtype=np.float32)
            if base:
                grown[:base] = self._sums[:base]
                counts[:base] = self._counts[:base]
            self._sums, self._counts = grown, counts
        self._row.update((p, base + n) for n, p in enumerate(new))
        self._sums[base:base + len(new)] = sums
        self._counts[base:base + len(new)] = lengths

    def embed(self, texts: Sequence[str]) -> Any:
        """Return one L2-normalised float32 row per text (the mean of its first 256 tokens' vectors)."""
        import numpy as np

        split = [_pieces_of(t) for t in texts]
        with self._lock:
            self._learn(p for pieces in split for p in pieces)
            self._add(p for pieces in split for p in pieces)
            row, sums, counts_of, known = self._row, self._sums, self._counts, self._known
        rows = [[row[p] for p in pieces] for pieces in split]
        padded = _padded(rows)
        if not len(padded):
            return np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = np.where(padded >= 0, counts_of[padded], 0.0).sum(axis=0)
        out = _segment_sums(sums, padded, self.dim) / np.maximum(counts, 1.0)[:, None]
        for n in np.flatnonzero(counts > _MAX_TOKENS):  # long texts: their first 256 tokens, exactly
            ids = [t for p in split[n] for t in known[p]][:_MAX_TOKENS]
            out[n] = np.asarray(self.table[ids], dtype=np.float32).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def vector(self, text: str) -> list[float]:
        """Return one text's vector as ``embed`` makes it (to float32's precision), without numpy.

        For a process that searches once: the query's tokens' rows are read from the
        weights file one by one (a few dozen of the table's 32k).
        """
        pieces = _pieces_of(text)
        with self._lock:
            self._learn(pieces)
            ids = [t for p in pieces for t in self._known[p]][:_MAX_TOKENS]
        total = [0.0] * self.dim
        if not ids:
            return total
        code = "e" if self._kind == "F16" else "f"
        row = struct.Struct(f"<{self.dim}{code}")
        fd = os.open(self.weights, os.O_RDONLY)
        try:
            for token, times in Counter(ids).items():
                values = row.unpack(os.pread(fd, row.size, self._offset + token * row.size))
                total = [t + times * v for t, v in zip(total, values)]
        finally:
            os.close(fd)
        length = math.sqrt(math.fsum(t * t for t in total)) or 1.0
        return [t / length for t in total]


def wordllama() -> WordLlamaEmbedder:
    """Return the WordLlama embedder from the installed ``wordllama`` package's files (the ``am[semantic]`` extra).

    Raises ImportError when the package (or numpy, tokenizers) is not installed,
    FileNotFoundError when its wheel lacks the packaged model.
    """
    from importlib.util import find_spec

    spec = find_spec("wordllama")  # finds the folder without running the package's __init__
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the wordllama package is not installed")
    folder = Path(next(iter(spec.submodule_search_locations)))
    for part in (_WEIGHTS, _TOKENIZER):
        if not (folder / part).is_file():
            raise FileNotFoundError(f"{folder / part} is missing: the wordllama wheel ships it "
                                    "(reinstall: pip install --force-reinstall wordllama)")
    return WordLlamaEmbedder(folder, _release(folder))


def _release(folder: Path) -> str:
    """The installed wordllama's version: from its dist-info folder beside the package when there is one
    (importing importlib.metadata and searching every path costs a query process ~20 ms), else from metadata."""
    found = [d / "METADATA" for d in folder.parent.glob("wordllama-*.dist-info") if (d / "METADATA").is_file()]
    if len(found) == 1:
        with open(found[0], encoding="utf-8", errors="replace") as meta:
            for line in meta:
                if line.startswith("Version:"):
                    return line.removeprefix("Version:").strip()
                if not line.strip():
                    break  # the headers end: the body follows
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wordllama")
    except PackageNotFoundError:
        return "unknown"
