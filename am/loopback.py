"""Serving on 127.0.0.1 only: the listening socket and the DNS-rebinding guard of `am mcp --http` and `am serve`.

A web page in the user's browser can reach a server on localhost (DNS
rebinding: a name it controls resolves to 127.0.0.1), so every request must
name this server's own host and port (else 421), and a request a page sends
must come from this server's own origin (else 403). With a token, a request
must also carry ``Authorization: Bearer <token>`` (else 401).

May import: ``am.errors`` and the standard library (the guard is plain ASGI,
no web framework). Must not import: any other part of am (both doors use it).

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

import hmac
import socket
from typing import Any

from am.errors import UsageError

__all__ = ["HOST", "Guard", "bind"]

HOST = "127.0.0.1"


class Guard:
    """ASGI middleware: refuse a foreign Host (421), a foreign Origin (403), a missing or wrong token (401)."""

    def __init__(self, app: Any, *, port: int, name: str, token: str | None = None) -> None:
        self.app = app
        self.name = name
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
            await self._refuse(send, 421, "this server answers only to its own address (Host refused)")
            return
        origin = headers.get(b"origin")
        if origin is not None and origin not in self.origins:
            await self._refuse(send, 403, "requests from other origins are refused (Origin refused)")
            return
        if self.expected is not None and not hmac.compare_digest(headers.get(b"authorization", b""), self.expected):
            await self._refuse(send, 401, "a bearer token is required (Authorization refused)",
                               extra=[(b"www-authenticate", b'Bearer realm="am"')])
            return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Any, status: int, text: str,
                      extra: list[tuple[bytes, bytes]] | None = None) -> None:
        body = f"{self.name}: {text}\n".encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode()), *(extra or [])]})
        await send({"type": "http.response.body", "body": body})


def bind(port: int) -> socket.socket:
    """Listen on 127.0.0.1:PORT (0: a free port); UsageError when the port is taken."""
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
