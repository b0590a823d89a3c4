"""`am mcp --http`: Streamable HTTP on 127.0.0.1 only, with Host, Origin and an optional bearer token checked.

A web page in the user's browser can reach a server on localhost (DNS
rebinding: a name it controls resolves to 127.0.0.1), so every request must
name this server's own host and port, and a request from a page must come
from this server's own origin. With a token set, a request must carry it as
``Authorization: Bearer <token>`` (am/loopback.py). These checks run in front of the SDK's own
(which are kept, with the same exact host and port).

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from am.errors import UsageError
from am.loopback import HOST, Guard, bind
from am.mcp.server import Dispatcher, ServerOptions, announce, build_server

__all__ = ["HOST", "Guard", "read_token", "serve_http"]

TOKEN_ENV = "AM_MCP_TOKEN"


def read_token(token_file: Path | None) -> str | None:
    """Return the bearer token: the first line of ``token_file``, else $AM_MCP_TOKEN, else None."""
    if token_file is not None:
        try:
            text = token_file.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise UsageError(f"cannot read the token file {token_file}: {err.strerror}",
                             hint="write the token to that file (one line)") from None
        if not text:
            raise UsageError(f"the token file {token_file} is empty", hint="write the token to it (one line)")
        return text.splitlines()[0].strip()
    return os.environ.get(TOKEN_ENV) or None


def serve_http(options: ServerOptions, *, port: int, token: str | None) -> None:
    """Serve MCP over Streamable HTTP at http://127.0.0.1:PORT/mcp until interrupted."""
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    sock = bind(port)
    port = sock.getsockname()[1]
    dispatcher = Dispatcher(options)
    server = build_server(dispatcher)
    hosts = [f"{HOST}:{port}", f"localhost:{port}"]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=[f"http://{h}" for h in hosts])
    app = Guard(server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=HOST),
                port=port, name="am mcp", token=token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    async def main() -> None:
        announce(f"serving http://{HOST}:{port}/mcp" + (" (bearer token required)" if token else ""))
        await web.serve(sockets=[sock])

    try:
        anyio.run(main)
    finally:
        sock.close()
        dispatcher.close()
