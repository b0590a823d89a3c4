"""The MCP tools that write: facts, topics, relations and review decisions, one commit each.

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from am.errors import UsageError
from am.mcp.toolkit import Call, ToolOutput, written

if TYPE_CHECKING:
    from am.records.writes import FactDraft


def draft_of(call: Call, args: dict[str, Any], *, default_world: bool) -> tuple[FactDraft, str | None]:
    """Return the draft of a new fact, and a warning to pass on; its world as the arguments name it, filled as the
    schema says.

    ``default_world``: a world the arguments leave out is the server's clone's (the repo, its current branch,
    whose tip the write records as the commit), filled through the code every door uses (``fill_world``);
    ``here: false`` asks for none (a fact that holds in every world of the vault). A supersede passes False:
    its new fact inherits the old one's world. ``here: true`` goes through the CLI's --here (``draft_here``): a
    work tree with uncommitted changes marks the fact ``dirty`` and returns the warning the CLI prints.
    """
    from am.records.writes import FactDraft

    repo, branch, commit = args.get("repo"), args.get("branch"), args.get("commit")
    if default_world and not args.get("here") and "here" not in args and call.fill is not None:
        repo, branch, commit = call.fill(repo, branch, commit)
    draft = FactDraft(
        text=args["text"], topics=tuple(args.get("topics", ())), id=args.get("id"),
        confidence=args.get("confidence"), provenance=args.get("provenance"), repo=repo, branch=branch,
        commit=commit, paths=tuple(args.get("paths", ())), valid_from=args.get("valid_from"),
        valid_until=args.get("valid_until"), tags=tuple(args.get("tags", ())), pin=args.get("pin", False),
        axis=args.get("axis"),
    )
    if not args.get("here"):
        return draft, None
    if call.here()[0] is None:
        raise UsageError("here: the server was not started in a registered code repository",
                         hint="pass repo, branch and commit, or start am mcp in your clone")
    from am.writes.worldwrites import draft_here

    return draft_here(draft, cwd=call.folder)


def fact_add(call: Call, args: dict[str, Any]) -> ToolOutput:
    import dataclasses

    from am.records.model import Fact
    from am.writes.duplicates import recorded_hint

    draft, warning = draft_of(call, args, default_world=True)
    draft = dataclasses.replace(draft, if_similar=args.get("if_similar"))
    result = call.vault.add_fact(draft, create_topics=args.get("create_topics", False),
                                 unverified=args.get("unverified", False))
    if not result.created and isinstance(result.records[0], Fact):  # say what to do in tools, not commands
        result = dataclasses.replace(result, note=recorded_hint(result.records[0], draft, tools=True))
    output = written(call, result, "added")
    output.data.setdefault("created", True)
    if warning is not None:
        output = dataclasses.replace(output, text=output.text + f"\nwarning: {warning}",
                                     data={**output.data, "warning": warning})
    return output


def fact_supersede(call: Call, args: dict[str, Any]) -> ToolOutput:
    result = call.vault.supersede_fact(args["old_id"], draft_of(call, args, default_world=False)[0],
                                       reason=args["reason"],
                                       create_topics=args.get("create_topics", False),
                                       unverified=args.get("unverified", False))
    return written(call, result, "superseded by")


def fact_expire(call: Call, args: dict[str, Any]) -> ToolOutput:
    return written(call, call.vault.expire_fact(args["id"], reason=args["reason"]), "expired")


def fact_confirm(call: Call, args: dict[str, Any]) -> ToolOutput:
    result = call.vault.confirm_fact(args["id"], commit=args.get("commit"), unverified=args.get("unverified", False))
    return written(call, result, "confirmed")


def topic_add(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.records.model import TOPIC_KINDS

    kind = args.get("kind")
    if kind is None:
        prefix = (args.get("id") or "").split("-", 1)[0]
        kind = prefix if prefix in TOPIC_KINDS else "concept"
    result = call.vault.add_topic(title=args["title"], kind=kind, id=args.get("id"),
                                  aliases=tuple(args.get("aliases", ())), tags=tuple(args.get("tags", ())),
                                  body=args.get("body", ""))
    return written(call, result, "added")


def relation_add(call: Call, args: dict[str, Any]) -> ToolOutput:
    result = call.vault.add_relation(args["from"], args["rel"], args["to"], note=args.get("note", ""))
    return written(call, result, "added")



def review_decide(call: Call, args: dict[str, Any]) -> ToolOutput:
    from am.upkeep.review import decide

    # As `am review`: confirm's world is filled from the server's clone; a supersede's is what the agent gave
    # (else the old fact's); decide() refuses one given to another decision.
    if args["decision"] == "confirm":
        repo, branch, commit = call.world(args)
    else:
        repo, branch, commit = args.get("repo"), args.get("branch"), args.get("commit")
    result = decide(call.vault, args["decision"], args["id"], reason=args.get("reason"), text=args.get("text"),
                    repo=repo, branch=branch, commit=commit, door="review_decide")
    return written(call, result, {"accept": "accepted", "confirm": "confirmed", "supersede": "superseded",
                                   "expire": "expired", "reject": "rejected"}[args["decision"]])

