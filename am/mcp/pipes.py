"""Standard input and output for the stdio server, read and written on the event loop itself.

The SDK's ``stdio_server()`` wraps the process's standard streams in anyio's
``AsyncFile``, which runs every ``readline``, ``write`` and ``flush`` on a worker
thread: three thread hand-offs for each tool call, on top of the worker that
runs the call. Each hand-off wakes a thread, and on a busy machine a woken
thread waits for a core (issue 16: 2-4 ms of a warm call that matches nothing).
``stdio_server()`` takes the two streams as arguments; this module gives it two
that are the event loop's own pipe transports (``connect_read_pipe``,
``connect_write_pipe``), so a message in and its answer out cost no thread.

Passing streams skips the SDK's claim of descriptors 0 and 1, so ``claim``
does the same here: the wire moves to private duplicates, descriptor 0 reads
the null device and descriptor 1 writes to standard error while the server
runs (a stray ``print`` cannot corrupt the protocol), and all of it is put
back on exit. Where the descriptors are not pipes or sockets (Windows, a
terminal, a file), ``usable`` says no and the server keeps the SDK's own
streams.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["LineReader", "LineWriter", "claim", "usable"]

_LINE_LIMIT = 1 << 30  # a JSON-RPC message is one line, and may be long (a pack, a big fact)


def usable() -> bool:
    """Say whether descriptors 0 and 1 are pipes or sockets (what an agent's client gives its server).

    Anything else (a terminal, /dev/null, a file) keeps the SDK's threads: epoll refuses some of
    them, and a person typing at a server does not need its milliseconds.
    """
    if sys.platform == "win32":
        return False
    try:
        modes = [os.fstat(fd).st_mode for fd in (0, 1)]
    except OSError:
        return False
    return all(stat.S_ISFIFO(m) or stat.S_ISSOCK(m) for m in modes)


@dataclass(frozen=True)
class Wire:
    """The private duplicates of standard input and output that carry the protocol."""

    read_fd: int
    write_fd: int


@contextmanager
def claim() -> Iterator[Wire]:
    """Move the protocol to private descriptors; point 0 at the null device and 1 at stderr; restore on exit."""
    import fcntl

    sys.stdout.flush()
    saved = {fd: fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)}
    flags = {fd: fcntl.fcntl(saved[fd], fcntl.F_GETFL) for fd in (0, 1)}
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    wire = Wire(os.dup(saved[0]), os.dup(saved[1]))  # the loop's transports own and close these
    try:
        yield wire
    finally:
        for fd in (0, 1):
            os.dup2(saved[fd], fd)
            # O_NONBLOCK belongs to the open file, which the client (or a terminal) shares: put it back.
            fcntl.fcntl(fd, fcntl.F_SETFL, flags[fd])
            os.close(saved[fd])


class LineReader:
    """Lines of text from a pipe, read by the event loop (what ``stdio_server`` iterates over)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            reader = asyncio.StreamReader(limit=_LINE_LIMIT)
            self._transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                              os.fdopen(self._fd, "rb", 0))
            self._reader = reader
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")

    def close(self) -> None:
        """Stop reading and close the descriptor."""
        if self._transport is not None:
            self._transport.close()
        else:
            os.close(self._fd)


class _Flow(asyncio.Protocol):
    """A write pipe's flow control: the transport pauses us when its buffer is full."""

    def __init__(self) -> None:
        self.paused = False
        self.lost: BaseException | None = None
        self._waiters: list[asyncio.Future[None]] = []

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or BrokenPipeError("the MCP client closed its end of the pipe")
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()

    async def drain(self) -> None:
        while self.paused and self.lost is None:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        if self.lost is not None:
            raise self.lost


class LineWriter:
    """Text to a pipe, written by the event loop (``write`` then ``flush``, as ``stdio_server`` calls them)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pipe: tuple[asyncio.WriteTransport, _Flow] | None = None

    async def _open(self) -> tuple[asyncio.WriteTransport, _Flow]:
        if self._pipe is None:
            loop = asyncio.get_running_loop()
            self._pipe = await loop.connect_write_pipe(_Flow, os.fdopen(self._fd, "wb", 0))
        return self._pipe

    async def write(self, text: str) -> None:
        """Hand text to the transport, which writes at once what the pipe takes and buffers the rest."""
        transport, flow = await self._open()
        if flow.lost is not None:
            raise flow.lost
        transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        """Wait while the transport's buffer is full (the client reads slower than the server writes)."""
        await (await self._open())[1].drain()

    def close(self) -> None:
        """Close the transport (the descriptor with it)."""
        if self._pipe is not None:
            self._pipe[0].close()
        else:
            os.close(self._fd)
