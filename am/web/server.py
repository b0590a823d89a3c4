"""`am serve`: the read-only web view on 127.0.0.1, on the MCP SDK's web stack (starlette, uvicorn).

Every route is a GET (HEAD too); any other method is refused with 405 before
it reaches the library, and nothing the routes call writes to the vault. A web
page in the user's browser can reach a server on localhost (DNS rebinding),
so, as ``am mcp --http`` does, every request must name this server's own host
and port, and a request a page sends must come from its own origin (am/loopback.py). The page and its script are served from the package
(no asset from the network). The library runs on a few worker threads, each
with its own ``Vault`` kept open for the server's life (as ``am mcp`` does: a
cache connection per thread, the cache's locks shared in the process), so one
slow page (a review queue, an export) does not hold up the others; the topic
graphs' layouts are shared. The event loop only moves bytes.

Decisions: docs/decisions/web.md.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from am.errors import AmError, NotFoundError, UsageError
from am.loopback import HOST, Guard, bind
from am.web.files import STATIC_FILES, static_text

if TYPE_CHECKING:
    from am.web.views import Views

__all__ = ["HOST", "Guard", "bind", "build_app", "serve"]

WORKERS = 4  # requests the library answers at once; each thread opens the vault once

_HEADERS = {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
}


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes", "on")


def build_app(vault_root: Path, *, port: int, defaults: dict[str, Any] | None = None,
              vault_branch: str | None = None) -> tuple[Any, Callable[[], None]]:
    """Return the guarded ASGI app for a vault, and a function that releases its worker and vault."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    worker = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="am-serve")
    local = threading.local()
    opened: list[Views] = []
    guard = threading.Lock()
    graphs: dict[Any, Any] = {}  # the layouts, shared by the threads' views
    start = dict(defaults or {})

    def views() -> Views:
        found: Views | None = getattr(local, "views", None)
        if found is None:
            from am.vault import Vault
            from am.web.views import Views

            found = local.views = Views(Vault.open(vault_root, branch=vault_branch), graphs=graphs)
            with guard:
                opened.append(found)
        return found

    def request_of(query: Any, *, topic: bool = True) -> Any:
        from am.web.views import world_request

        try:
            depth = int(query.get("depth") or 1)
        except ValueError:
            raise UsageError(f"depth {query.get('depth')!r} is not a number", hint="give a depth from 0 to 10") from None
        return world_request(repo=query.get("repo"), branch=query.get("branch"), commit=query.get("commit"),
                             at=query.get("at"), topic=query.get("topic") if topic else None, depth=depth,
                             include_pending=_flag(query.get("pending")))

    async def answer(work: Callable[[], Any], *, extra: dict[str, str] | None = None) -> Response:
        loop = asyncio.get_running_loop()
        try:
            data = await loop.run_in_executor(worker, work)
        except NotFoundError as err:
            return JSONResponse({"error": err.message, "hint": err.hint}, status_code=404, headers=_HEADERS)
        except AmError as err:
            return JSONResponse({"error": err.message, "hint": err.hint}, status_code=400, headers=_HEADERS)
        if isinstance(data, str):
            return Response(data, media_type="text/html; charset=utf-8", headers={**_HEADERS, **(extra or {})})
        body = json.dumps(data, ensure_ascii=False, sort_keys=True)
        return Response(body, media_type="application/json; charset=utf-8", headers=_HEADERS)

    async def page(request: Request) -> Response:
        return Response(static_text("index.html"), media_type="text/html; charset=utf-8", headers=_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC_FILES:
            return Response("not found\n", status_code=404, media_type="text/plain", headers=_HEADERS)
        return Response(static_text(name), media_type=f"{STATIC_FILES[name]}; charset=utf-8", headers=_HEADERS)

    async def worlds(request: Request) -> Response:
        return await answer(lambda: {**views().worlds(), "default": start})

    async def graph(request: Request) -> Response:
        return await answer(lambda: views().graph(request_of(request.query_params)))

    async def topic(request: Request) -> Response:
        tid = request.path_params["topic"]
        return await answer(lambda: views().topic(request_of(request.query_params, topic=False), tid))

    async def log(request: Request) -> Response:
        query = request.query_params

        def work() -> Any:
            try:
                limit = max(1, min(int(query.get("limit") or 200), 5000))
            except ValueError:
                raise UsageError("limit is not a number", hint="give a count such as 200") from None
            return views().log(actor=query.get("actor"), op=query.get("op"), limit=limit)

        return await answer(work)

    async def review(request: Request) -> Response:
        return await answer(lambda: views().review(request_of(request.query_params, topic=False)))

    async def numbers(request: Request) -> Response:
        return await answer(lambda: views().numbers(request_of(request.query_params, topic=False)))

    async def export(request: Request) -> Response:
        from am.web.export import render_html

        # A download, never a page here: its inline script is what this server's CSP refuses (opened here: blank).
        return await answer(lambda: render_html(views().topic_graph(request_of(request.query_params))),
                            extra={"content-disposition": 'attachment; filename="am-graph.html"'})

    get = ["GET"]  # HEAD is answered with every GET route; no route takes another method
    routes = [
        Route("/", page, methods=get),
        Route("/static/{name}", static, methods=get),
        Route("/api/worlds", worlds, methods=get),
        Route("/api/graph", graph, methods=get),
        Route("/api/topic/{topic}", topic, methods=get),
        Route("/api/log", log, methods=get),
        Route("/api/review", review, methods=get),
        Route("/api/numbers", numbers, methods=get),
        Route("/export/graph.html", export, methods=get),
    ]
    app = Starlette(routes=routes)

    def warm() -> None:
        # The page's first question is the graph of the starting world: lay it out before the browser asks.
        from am.web.views import world_request

        try:
            views().graph(world_request(repo=start.get("repo"), branch=start.get("branch"),
                                        commit=start.get("commit")))
        except AmError:
            pass  # the page asks again and shows the error
        # Then the fact writes by actor of the Numbers page: the first count walks all history (seconds at 10k
        # commits), and is kept (am/upkeep/writers.py), so a person who opens Numbers later finds it done.
        from am.upkeep.writers import fact_writes_by_actor

        try:
            fact_writes_by_actor(views().vault)
        except AmError:
            pass  # the page counts again and shows the error

    worker.submit(warm)

    def close() -> None:
        worker.shutdown(wait=True)
        with guard:
            for found in opened:
                found.vault.close()
            opened.clear()

    return Guard(app, port=port, name="am serve"), close


def serve(vault_root: Path, *, port: int, open_browser: bool = False, defaults: dict[str, Any] | None = None,
          vault_branch: str | None = None, announce: Callable[[str], None] | None = None,
          sock: socket.socket | None = None) -> None:
    """Serve the view at http://127.0.0.1:PORT/ until interrupted; open it in the browser if asked."""
    import uvicorn

    sock = sock or bind(port)
    port = sock.getsockname()[1]
    app, close = build_app(vault_root, port=port, defaults=defaults, vault_branch=vault_branch)
    url = f"http://{HOST}:{port}/"
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))

    async def main() -> None:
        if announce is not None:
            announce(f"serving {url} (read-only; Ctrl-C stops)")
        if open_browser:
            import webbrowser

            asyncio.get_running_loop().call_later(0.3, webbrowser.open, url)
        await web.serve(sockets=[sock])

    try:
        asyncio.run(main())
    finally:
        sock.close()
        close()
