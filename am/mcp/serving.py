"""The SDK's handlers for am's prompts and resources (``prompts/*``, ``resources/*``), beside the tools.

Imported by ``am.mcp.server`` only when a server starts, as the SDK is. Each
handler turns ``am.mcp.prompts`` and ``am.mcp.resources`` into the protocol's
types; vault work runs on the dispatcher's worker threads, each with its warm
vault. An error is the protocol's: invalid params (-32602) with am's own
one-line message and its fix, and for a record that does not exist, the code
the announced protocol version gives "resource not found" (-32002 up to
2025-11-25; -32602 from 2026-07-28, which retired it).

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from am.errors import AmError, NotFoundError
from am.mcp.prompts import PROMPTS, prompt_named
from am.mcp.resources import MIME, list_page, parse_uri, read_text, templates
from am.mcp.toolkit import ToolOutput

if TYPE_CHECKING:
    from am.vault import Vault

__all__ = ["Dispatching", "handlers"]

T = TypeVar("T")


class Options(Protocol):
    """How the server was started, as far as prompts and resources care."""

    @property
    def read_only(self) -> bool: ...


class Dispatching(Protocol):
    """What the handlers need of the server's dispatcher (``am.mcp.server.Dispatcher`` is one)."""

    @property
    def options(self) -> Options: ...

    def call(self, name: str, args: dict[str, Any], client: str | None) -> Awaitable[ToolOutput | str]: ...

    def on_vault(self, work: Callable[[Vault], T]) -> Awaitable[T]: ...

_RETIRED_NOT_FOUND = "2026-07-28"  # the first protocol version without -32002 (resource not found)


def _failure(err: AmError, version: str | None) -> Exception:
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    not_found = isinstance(err, NotFoundError) and (version or "") < _RETIRED_NOT_FOUND
    return MCPError(-32002 if not_found else INVALID_PARAMS, f"Error: {err}")


def _version(ctx: Any) -> str | None:
    connection = getattr(ctx.session, "_connection", None)
    return getattr(connection, "protocol_version", None)


def handlers(dispatcher: Dispatching, client_of: Callable[[Any], str | None]) -> dict[str, Any]:
    """Return the Server's keyword arguments for prompts and resources."""
    import mcp_types as types

    read_only = dispatcher.options.read_only

    async def list_prompts(ctx: Any, params: Any) -> Any:
        client_of(ctx)
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, title=p.title, description=p.description,
                         arguments=[types.PromptArgument(name=a.name, description=a.description, required=a.required)
                                    for a in p.arguments])
            for p in PROMPTS if not (read_only and p.writes)])

    async def get_prompt(ctx: Any, params: Any) -> Any:
        client = client_of(ctx)
        args = dict(params.arguments or {})
        try:
            prompt = prompt_named(params.name, read_only=read_only)
            prompt.check(args)
        except AmError as err:
            raise _failure(err, _version(ctx)) from None
        text = ""
        if prompt.tool is not None:
            out = await dispatcher.call(prompt.tool, prompt.tool_args(args), client)
            if not isinstance(out, ToolOutput):
                from mcp.shared.exceptions import MCPError

                raise MCPError(types.INVALID_PARAMS, out)
            text = out.text
        message = types.PromptMessage(role="user", content=types.TextContent(type="text",
                                                                             text=prompt.message(args, text)))
        return types.GetPromptResult(description=prompt.description, messages=[message])

    async def list_resources(ctx: Any, params: Any) -> Any:
        client_of(ctx)
        cursor = getattr(params, "cursor", None) if params is not None else None
        try:
            found, after = await dispatcher.on_vault(lambda vault: list_page(vault, cursor))
        except AmError as err:
            raise _failure(err, _version(ctx)) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=MIME)
            for r in found], next_cursor=after)

    async def list_templates(ctx: Any, params: Any) -> Any:
        client_of(ctx)
        name = await dispatcher.on_vault(lambda vault: vault.name)
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=uri, name=kind, description=description, mime_type=MIME)
            for uri, kind, description in templates(name)])

    async def read_resource(ctx: Any, params: Any) -> Any:
        client_of(ctx)
        uri = str(params.uri)

        def read(vault: Vault) -> str:
            kind, record_id = parse_uri(uri, vault.name)
            return read_text(vault, kind, record_id)

        try:
            text = await dispatcher.on_vault(read)
        except AmError as err:
            raise _failure(err, _version(ctx)) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=MIME, text=text)])

    return {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt, "on_list_resources": list_resources,
            "on_list_resource_templates": list_templates, "on_read_resource": read_resource}
