"""The MCP tools: each a JSON schema and a thin door into the same library call as its CLI command.

The table is here; the calls are in ``am.mcp.reads`` and ``am.mcp.writes``,
their schemas in ``am.mcp.schemas``, what every tool is made of in
``am.mcp.toolkit`` (whose public names this module re-exports).

Decisions: docs/decisions/agents.md.
"""

from __future__ import annotations

from am.mcp.reads import (check_tool, log_tool, review_list, search_tool, show_tool, slice_tool, topic_list,
                          why_tool)
from am.mcp.schemas import (FACT_ADD_OUT, FACT_FIELDS, ID_IN, NOTE, RECORD_OUT, SEARCH_IN, SEARCH_OUT, SLICE_IN,
                            SLICE_OUT, SUPERSEDE_OUT, TOTAL, WORLD, WRITE_OUT, limit_in, obj, string, strings)
from am.mcp.toolkit import DATA_NOTE, Call, Tool, ToolOutput, World, record_dict
from am.mcp.writes import (fact_add, fact_confirm, fact_expire, fact_supersede, relation_add, review_decide,
                           topic_add)

__all__ = ["DATA_NOTE", "TOOLS", "WRITE_TOOLS", "Call", "Tool", "ToolOutput", "World", "record_dict", "tool_named"]

TOOLS: tuple[Tool, ...] = (
    Tool("slice", "Read the context pack: the facts, topics and relations that hold in a world (repo, branch, "
         "commit, time), ranked and cut to a token budget. Read it before a task. Default world: the server's clone.",
         SLICE_IN, SLICE_OUT, slice_tool),
    Tool("search", "Full-text search of facts, topics and relations (BM25; English, Chinese, Japanese), in a world as "
         "am search: started in a registered clone (or given branch), only records that hold there, each superseded "
         "or stale there marked (world_mark); notes say when a time phrase matched nothing.",
         SEARCH_IN, SEARCH_OUT, search_tool, quick=True),
    Tool("why", "Explain why a fact is or is not in a world (default: the server's clone): each rule a slice "
         "applies (status, repo, commit ancestry or branch name, valid time, supersession, staleness) with its evidence.",
         obj({"id": string("The fact's id."), **WORLD,
               "at": string("Valid time (ISO date, date-time or a phrase; default now)."),
               "include_pending": {"type": "boolean", "description": "Let pending-review facts hold."}}, ("id",)),
         obj({"fact": {"type": "string"}, "world": {"type": "object"}, "holds": {"type": "boolean"},
               "section": {"type": ["string", "null"]}, "steps": {"type": "array", "items": {"type": "object"}}},
              ("fact", "holds", "steps")), why_tool),
    Tool("fact_show", "Show one fact: its text, status, confidence, provenance and world.", ID_IN, RECORD_OUT,
         show_tool("fact"), quick=True),
    Tool("topic_show", "Show one topic.", ID_IN, RECORD_OUT, show_tool("topic"), quick=True),
    Tool("topic_list", "List topics, sorted by id: the first 100 unless limit says otherwise; total counts them all.",
         obj({"kind": string("Only topics of this kind.", enum=["project", "tool", "person", "org", "decision", "session",
                                                             "concept", "event"]),
               "limit": limit_in(100, "topics")}),
         obj({"note": NOTE, "total": TOTAL, "topics": {"type": "array", "items": {"type": "object"}}},
              ("note", "total", "topics")),
         topic_list, quick=True),
    Tool("log", "List the vault's writes, newest first (who, what operation, which records).",
         obj({"actor": string("Only commits by this actor."), "op": string("Only this operation, e.g. fact.supersede or fact."),
               "record": string("Only commits that wrote this record id."), "since": string("Only commits since this time."),
               "limit": {"type": "integer", "minimum": 1, "description": "At most this many (default 20)."}}),
         obj({"note": NOTE, "entries": {"type": "array", "items": {"type": "object"}}}, ("note", "entries")), log_tool),
    Tool("check", "Check every record of the vault: schemas, relation types, ids, links, supersessions. Lists the "
         "first 100 issues (errors first) unless limit says otherwise; errors, warnings, notes and total count them "
         "all.",
         obj({"strict": {"type": "boolean", "description": "Count warnings as errors."},
               "limit": limit_in(100, "issues")}),
         obj({"ok": {"type": "boolean"}, "files": {"type": "integer"}, "records": {"type": "integer"},
               "errors": {"type": "integer"}, "warnings": {"type": "integer"}, "notes": {"type": "integer"},
               "total": TOTAL, "issues": {"type": "array", "items": {"type": "object"}}}, ("ok", "total", "issues")),
         check_tool),
    Tool("fact_add", "Record a fact (one commit): one self-contained statement of 1-3 sentences about one or more "
         "topics. Its world defaults to the server's clone: that repo and current branch (from a feature branch, it "
         "holds on that branch until merged); here=false for a fact that holds in every world. If it replaces a "
         "fact, use fact_supersede. Already held or restated: nothing written (created false); an update or a "
         "contradiction of a holding fact: written, and named in similar with the call that settles it.",
         obj({"text": string("The statement, 1-3 sentences, understandable on its own."), **FACT_FIELDS,
              "if_similar": string("A look-alike holding fact: warn (default), refuse, allow",
                                   enum=["warn", "refuse", "allow"])},
             ("text", "topics")), FACT_ADD_OUT, fact_add, writes=True),
    Tool("fact_supersede", "Replace a fact that no longer holds with a new one (one commit touching both). "
         "The new fact inherits the old one's topics and world unless given: pass here=true when the new text "
         "describes the code at the server's clone, else it stays observed at the old fact's commit (and stale "
         "wherever the old one was). When another holding fact already says the new text (same topics, repo and "
         "branch), the old one is superseded by that fact instead: created false, its id, no twin written. A retry "
         "(the old one already superseded by a fact saying the text) answers the same, commit null, nothing written.",
         obj({"old_id": string("The fact being replaced."), "text": string("The new statement."),
               "reason": string("What changed."), **FACT_FIELDS}, ("old_id", "text", "reason")),
         SUPERSEDE_OUT, fact_supersede, writes=True),
    Tool("fact_expire", "Mark a fact expired: it no longer holds anywhere, and stays in the vault (one commit).",
         obj({"id": string("The fact's id."), "reason": string("Why it no longer holds.")}, ("id", "reason")),
         WRITE_OUT, fact_expire, writes=True),
    Tool("fact_confirm", "Re-confirm a fact at a newer commit (one commit): after checking that it still holds "
         "where its code changed, so it is no longer stale there. The commit must be on the fact's branch (or that "
         "branch gone from the clone); for a fact of another branch, fact_supersede with your branch instead.",
         obj({"id": string("The fact's id."),
               "commit": string("The commit it was re-observed at (default: the tip of the fact's branch)."),
               "unverified": {"type": "boolean", "description": "Record the commit as given, without the clone."}},
              ("id",)), WRITE_OUT, fact_confirm, writes=True),
    Tool("topic_add", "Add a topic (one commit): a project, tool, person, org, decision, session, concept or event.",
         obj({"title": string("The topic's name, in any language."), "id": string("Its id, <kind>-<slug> (default: from title)."),
               "kind": string("project, tool, person, org, decision, session, concept or event."),
               "aliases": strings("Other names."), "tags": strings("Tags."), "body": string("The note's text.")},
              ("title",)), WRITE_OUT, topic_add, writes=True),
    Tool("relation_add", "Add a typed edge FROM REL TO (one commit). REL is exactly one of: depends-on, part-of, "
         "belongs-to, authored-by, references, conflicts-with, supersedes.",
         obj({"from": string("A topic or fact id."), "rel": string("One of the seven relation types."),
               "to": string("A topic or fact id."), "note": string("Why the edge holds.")}, ("from", "rel", "to")),
         WRITE_OUT, relation_add, writes=True),
    Tool("review_list", "List what waits on judgement, with its evidence: facts proposed from sessions (with the "
         "session lines), pending facts, facts stale or due in the world, contested and similar pairs. Lists the "
         "first 20 unless limit says otherwise; counts (by kind) and total count the whole queue.",
         obj({**WORLD, "kinds": {"type": "array", "description": "Only these kinds (default: all).",
                                 "items": string("A kind.", enum=["proposal", "pending", "stale", "contested",
                                                                  "similar", "due"])},
               "diff": {"type": "boolean", "description": "Show the code diff of stale facts (default true)."},
               "limit": limit_in(20, "items")}),
         obj({"note": NOTE, "world": {"type": ["object", "null"]}, "counts": {"type": "object"}, "total": TOTAL,
               "items": {"type": "array", "items": {"type": "object"}}}, ("note", "total", "items")), review_list),
    Tool("review_decide", "Decide one review item (one commit, you as the reviewer): accept (a proposal, pending "
         "or contested fact), confirm (re-observed at the world's commit), supersede (with text), expire or "
         "reject (with a reason).",
         obj({"decision": string("What to do.", enum=["accept", "confirm", "supersede", "expire", "reject"]),
               "id": string("The fact's id."), "reason": string("Why (needed to expire)."),
               "text": string("The corrected text (to supersede)."),
               **{k: string(f"{v['description']} To confirm; to supersede, where the new fact is observed (for a "
                        "stale fact, your branch: else the new fact is stale at once).") for k, v in WORLD.items()}},
              ("decision", "id")),
         WRITE_OUT, review_decide, writes=True),
)

WRITE_TOOLS = frozenset(t.name for t in TOOLS if t.writes)
_BY_NAME = {t.name: t for t in TOOLS}


def tool_named(name: str) -> Tool | None:
    """Return the tool of this name, or None."""
    return _BY_NAME.get(name)
