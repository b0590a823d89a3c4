"""`am mcp --http`: Streamable HTTP on 127.0.0.1 only, with Host, Origin and an optional bearer token checked.

A web page in the user's browser can reach a server on localhost (DNS
rebinding: a name it controls resolves to 127.0.0.1), so every request must
name this server's own host and port, and a request from a page must come
from this server's own origin. With a token set, a request must carry it as
``Authorization: Bearer <token>``. These checks run in front of the SDK's own
(which are kept, with the same exact host and port).
"""

from __future__ import annotations

import hmac
import os
import socket
from pathlib import Path
from typing import Any

from am.errors import UsageError
from am.mcp.server import Dispatcher, ServerOptions, announce, build_server

__all__ = ["HOST", "Guard", "read_token", "serve_http"]

HOST = "127.0.0.1"
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


class Guard:
    """ASGI middleware: refuse a foreign Host (421), a foreign Origin (403), a missing or wrong token (401)."""

    def __init__(self, app: Any, *, port: int, token: str | None) -> None:
        self.app = app
        self.hosts = {f"{HOST}:{port}".encode(), f"localhost:{port}".encode()}
        self.origins = {b"http://" + h for h in self.hosts}
        self.expected = None if token is None else f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.lower(), value)
        if headers.get(b"host") not in self.hosts:
            await _refuse(send, 421, "am mcp: this server answers only to its own address (Host refused)")
            return
        origin = headers.get(b"origin")
        if origin is not None and origin not in self.origins:
            await _refuse(send, 403, "am mcp: requests from other origins are refused (Origin refused)")
            return
        if self.expected is not None:
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await _refuse(send, 401, "am mcp: a bearer token is required (Authorization refused)",
                              extra=[(b"www-authenticate", b'Bearer realm="am"')])
                return
        await self.app(scope, receive, send)


async def _refuse(send: Any, status: int, text: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as err:
        sock.close()
        raise UsageError(f"cannot listen on {HOST}:{port}: {err.strerror}",
                         hint="choose another port with --port (0 picks a free one)") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def serve_http(options: ServerOptions, *, port: int, token: str | None) -> None:
    """Serve MCP over Streamable HTTP at http://127.0.0.1:PORT/mcp until interrupted."""
    import anyio
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    sock = _bind(port)
    port = sock.getsockname()[1]
    dispatcher = Dispatcher(options)
    server = build_server(dispatcher)
    hosts = [f"{HOST}:{port}", f"localhost:{port}"]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=[f"http://{h}" for h in hosts])
    app = Guard(server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=HOST),
                port=port, token=token)
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
