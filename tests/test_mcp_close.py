"""A server that stops closes the vaults its worker threads opened, from its own thread, without an error."""

from __future__ import annotations

import asyncio

from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import ToolOutput
from am.vault import Vault


def test_close_after_calls_on_worker_threads(alpha: Vault) -> None:
    alpha.add_fact("Alpha keeps sessions in Redis.", topics=["project-alpha"])  # a slice that shows it counts a use
    d = Dispatcher(ServerOptions(vault_root=alpha.root, folder=alpha.root))

    async def calls() -> list[object]:
        return [await d.call("slice", {}, "close-test"), await d.call("search", {"query": "alpha"}, "close-test")]

    for out in asyncio.run(calls()):
        assert isinstance(out, ToolOutput), out
    assert d._opened, "the calls opened a vault on a worker thread"
    assert (alpha.root / ".am" / "cache" / "usage.sqlite").is_file(), "the slice counted a use"
    d.close()  # the use counts' SQLite file was opened on a worker thread; it is closed here
    assert not d._opened
