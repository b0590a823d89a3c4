"""The clerk (`am propose`) and the review queue (`am review`): proposals reach no pack, decisions are one commit each."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from conftest import commit_file, run_git
from session_samples import CLAUDE_SESSION, claude_lines, write_log
from test_cli import am

from am.registry import Registry
from am.vault import Vault

EXTRACTOR = r'''
import json, sys
request = json.load(sys.stdin)
assert request["protocol"] == "am.propose/1"
lines = {m["line"]: m for m in request["messages"]}
user = [m for m in request["messages"] if m["role"] == "user"]
print(json.dumps({"proposals": [
    {"text": "Alpha rate limits live in src/api/limits.py.", "lines": [5], "confidence": "high",
     "topics": ["project-alpha"]},
    {"text": "getUser is limited to 100 requests a minute per client.", "lines": [6]},
    {"text": "The users handler reads straight from db.users.", "lines": [4], "confidence": "low"},
    {"text": "A line that is not there.", "lines": [999]},
], "skipped": [{"text": "tests pass", "lines": [6], "reason": "not lasting knowledge"}]}))
'''


def _ingested(vault: Vault, tmp_path: Path) -> None:
    from am.sessions.ingest import ingest_file

    ingest_file(vault, write_log(tmp_path / f"{CLAUDE_SESSION}.jsonl", claude_lines()))


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "extractor.py"
    path.write_text(body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def _slice(root: Path) -> str:
    code, out, err = am("--vault", str(root), "slice", "--max-tokens", "0")
    assert code == 0, err
    return out


def test_a_scripted_extractor_proposes_three_facts_that_wait_for_review_and_reach_no_pack(alpha, git, tmp_path) -> None:
    _ingested(alpha, tmp_path)
    before = git("rev-parse", "HEAD").strip()
    code, out, err = am("--vault", str(alpha.root), "--actor", "clerk-bot", "propose", CLAUDE_SESSION,
                        "--extractor", _script(tmp_path, EXTRACTOR), "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert [p["lines"] for p in report["proposed"]] == [[5], [6], [4]]
    assert {s["reason"] for s in report["skipped"]} == {
        "cites line 999, which the session does not have", "extractor: not lasting knowledge"}
    assert report["read"] == {"lines": 6, "messages": 6}
    # One commit: the three proposals and the session topic's clerk entry, the report in its message.
    assert git("rev-list", "--count", f"{before}..HEAD").strip() == "1"
    message = git("log", "-1", "--format=%B")
    assert message.startswith(f"session: propose 3 facts from {CLAUDE_SESSION}")
    assert "skipped (line 999)" in message and "Am-Op: session.propose" in message and "Am-Actor: clerk-bot" in message
    ids = [p["id"] for p in report["proposed"]]
    for fid in ids:
        fact = alpha.get_fact(fid)
        assert fact.status == "pending-review" and fact.provenance == f"session:{CLAUDE_SESSION}"
        assert f"session-{CLAUDE_SESSION}" in fact.topics
    assert alpha.get_fact(ids[0]).topics == (f"session-{CLAUDE_SESSION}", "project-alpha")
    assert alpha.get_fact(ids[0]).extra["source_lines"] == [5]
    # In the review queue, with the session lines they cite; in no pack.
    code, out, err = am("--vault", str(alpha.root), "review", "list", "--format", "json")
    assert code == 0, err
    queue = json.loads(out)
    proposals = {i["id"]: i for i in queue["items"] if i["kind"] == "proposal"}
    assert set(proposals) == set(ids)
    assert proposals[ids[0]]["evidence"] == [
        "line 5, user: remember: the Alpha rate limits live in src/api/limits.py, not in the handlers."]
    pack = _slice(alpha.root)
    assert "limits.py" not in pack and "100 requests" not in pack
    from am.upkeep.review import proposals  # what the web view's review page lists

    assert [p.id for p in proposals(alpha)] == [i["id"] for i in queue["items"] if i["kind"] == "proposal"]
    # Running the clerk again proposes nothing twice.
    code, out, _ = am("--vault", str(alpha.root), "propose", CLAUDE_SESSION, "--extractor",
                      _script(tmp_path, EXTRACTOR), "--format", "json")
    again = json.loads(out)
    assert again["proposed"] == [] and sum("already proposed" in s["reason"] for s in again["skipped"]) == 3

    # Accepting one makes it active in one commit named by the reviewer; rejecting one expires it with the reason.
    head = git("rev-parse", "HEAD").strip()
    code, out, err = am("--vault", str(alpha.root), "--actor", "alice", "review", "accept", ids[1])
    assert code == 0, err
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    message = git("log", "-1", "--format=%B")
    assert message.startswith(f"review: accept {ids[1]} (by alice)") and "Am-Actor: alice" in message
    assert git("log", "-1", "--format=%an").strip() == "alice"
    assert alpha.get_fact(ids[1]).status == "active"
    assert "100 requests a minute" in _slice(alpha.root)
    head = git("rev-parse", "HEAD").strip()
    code, _, err = am("--vault", str(alpha.root), "--actor", "alice", "review", "reject", ids[2],
                      "--reason", "an implementation detail")
    assert code == 0, err
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    rejected = alpha.get_fact(ids[2])
    assert rejected.status == "expired" and rejected.reason == "rejected in review: an implementation detail"
    code, out, _ = am("--vault", str(alpha.root), "review", "list", "--format", "json")
    assert [i["id"] for i in json.loads(out)["items"]] == [ids[0]]


def test_the_default_clerk_proposes_remember_lines_and_final_decisions_and_reports_them(alpha, git, tmp_path) -> None:
    from am.sessions.clerk import propose

    _ingested(alpha, tmp_path)
    report = propose(alpha, CLAUDE_SESSION, topics=["project-alpha"])
    texts = {text: lines for _, text, lines in report.proposed}
    assert texts == {"the Alpha rate limits live in src/api/limits.py, not in the handlers.": (5,),
                     "getUser is limited to 100 requests a minute per client.": (6,)}
    assert report.commit is not None and report.extractor == "default"
    topic = alpha.get_topic(f"session-{CLAUDE_SESSION}")
    assert topic.extra["clerk_runs"] == 1 and topic.extra["clerk_last"]["proposed"] == 2
    # A dry run writes nothing and still reports.
    head = git("rev-parse", "HEAD").strip()
    dry = propose(alpha, CLAUDE_SESSION, dry_run=True)
    assert dry.commit is None and dry.proposed == [] and len(dry.skipped) == 2
    assert git("rev-parse", "HEAD").strip() == head


@pytest.mark.parametrize("body, message", [
    ("import sys; sys.stderr.write('model unreachable\\n'); sys.exit(3)", "failed (exit 3): model unreachable"),
    ("print('not json')", "did not print JSON"),
    ("print('{\"nothing\": 1}')", "without a 'proposals' list"),
])
def test_a_failing_extractor_writes_nothing(alpha, git, tmp_path, body, message) -> None:
    _ingested(alpha, tmp_path)
    head = git("rev-parse", "HEAD").strip()
    code, _, err = am("--vault", str(alpha.root), "propose", CLAUDE_SESSION, "--extractor", _script(tmp_path, body))
    assert code != 0 and message in err and "Traceback" not in err
    assert git("rev-parse", "HEAD").strip() == head


def test_a_fact_stale_on_a_branch_shows_the_diff_and_confirm_makes_it_fresh_there(alpha, git, tmp_path) -> None:
    code_repo = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code_repo))
    (code_repo / "src").mkdir()
    first = commit_file(code_repo, "src/users.py", "def get_user(id): pass")
    Registry.load().add_repo("project-alpha", code_repo)
    alpha.add_fact("getUser takes one id.", topics=["project-alpha"], id="fact-users", repo="project-alpha",
                   branch="main", commit=first, paths=("src/users.py",))
    run_git(code_repo, "checkout", "-q", "-b", "feat-batch")
    alpha.add_fact("The batch work starts from getUser.", topics=["project-alpha"], id="fact-batch",
                   repo="project-alpha", branch="feat-batch", paths=("src/users.py",))
    second = commit_file(code_repo, "src/users.py", "def get_users(ids): pass")
    world = ("--repo", "project-alpha", "--branch", "feat-batch")
    code, out, err = am("--vault", str(alpha.root), "review", "list", *world, "--format", "json")
    assert code == 0, err
    queue = json.loads(out)
    assert queue["world"]["commit"] == second
    stale = {i["id"]: i for i in queue["items"] if i["kind"] == "stale"}
    assert set(stale) == {"fact-batch", "fact-users"}
    # Main's fact is not offered a confirm here (nor an expire, which would end it on main too): the item says
    # how to settle it on feat-batch instead.
    assert stale["fact-users"]["choices"] == ["supersede"]
    assert ('a fact of main: check it on feat-batch, and if it no longer holds here: am fact supersede fact-users '
            '"what holds here" --branch feat-batch') in stale["fact-users"]["note"]
    item = stale["fact-batch"]
    assert item["choices"] == ["confirm", "supersede", "expire"]
    diff = "\n".join(item["evidence"])
    assert "-def get_user(id): pass" in diff and "+def get_users(ids): pass" in diff
    # Main's world never saw that commit: nothing stale there.
    code, out, _ = am("--vault", str(alpha.root), "review", "list", "--repo", "project-alpha", "--branch", "main",
                      "--format", "json")
    assert [i for i in json.loads(out)["items"] if i["kind"] == "stale"] == []
    head = git("rev-parse", "HEAD").strip()
    # Main's fact is not confirmed at feat-batch's commit: that would take it off main.
    code, _, err = am("--vault", str(alpha.root), "--actor", "bob", "review", "confirm", "fact-users", *world)
    assert code == 13 and "--branch feat-batch" in err and git("rev-parse", "HEAD").strip() == head
    code, _, err = am("--vault", str(alpha.root), "--actor", "bob", "review", "confirm", "fact-batch", *world)
    assert code == 0, err
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert alpha.get_fact("fact-batch").commit == second and alpha.get_fact("fact-users").commit == first
    code, out, _ = am("--vault", str(alpha.root), "review", "list", *world, "--format", "json")
    assert [i["id"] for i in json.loads(out)["items"]] == ["fact-users"]
    code, out, _ = am("--vault", str(alpha.root), "stale", *world, "--format", "json")
    assert [s["id"] for s in json.loads(out)["stale"]] == ["fact-users"]
    # Superseded on feat-batch by the review, with its world: main keeps its fact, feat-batch has the new one.
    code, out, err = am("--vault", str(alpha.root), "review", "supersede", "fact-users", "--text",
                        "get_users takes ids.", *world, "--format", "json")
    assert code == 0, err
    new = next(r for r in json.loads(out)["records"] if r["id"] != "fact-users")
    assert (new["version"], new["commit"]) == ("feat-batch", second)
    assert alpha.get_fact("fact-users").status == "active"
    code, out, _ = am("--vault", str(alpha.root), "stale", *world, "--format", "json")
    assert json.loads(out)["stale"] == []


def test_hand_set_pending_and_a_contested_pair_are_in_the_queue_and_accept_resolves_the_pair(alpha, git) -> None:
    from am.upkeep.review import decide, review_queue

    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    alpha.add_fact("Staging runs in eu-west-1.", topics=["project-alpha"], id="fact-region-a")
    alpha.add_fact("Staging runs in us-east-1.", topics=["project-alpha"], id="fact-region-b")
    alpha.set_fact_status("fact-region-a", "contested")
    alpha.set_fact_status("fact-region-b", "contested")
    alpha.add_relation("fact-region-a", "conflicts-with", "fact-region-b")
    queue = review_queue(alpha)
    kinds = {(i.kind, i.id) for i in queue.items}
    assert kinds == {("pending", "fact-deploy"), ("contested", "fact-region-a")}
    pair = next(i for i in queue.items if i.kind == "contested")
    assert [f.id for f in pair.facts] == ["fact-region-a", "fact-region-b"]
    assert "Staging runs in us-east-1." in "\n".join(pair.render())
    head = git("rev-parse", "HEAD").strip()
    decide(alpha, "accept", "fact-region-b", reason="checked the console")
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert alpha.get_fact("fact-region-b").status == "active"
    loser = alpha.get_fact("fact-region-a")
    assert loser.status == "superseded" and loser.superseded_by == "fact-region-b"
    assert alpha.get_relation("fact-region-a--conflicts-with--fact-region-b").status == "expired"
    with pytest.raises(Exception, match="not waiting for review"):
        decide(alpha, "reject", "fact-region-b")
    assert [i.id for i in review_queue(alpha).items] == ["fact-deploy"]


def test_review_list_limit_shows_the_first_items_and_says_how_many_more_wait(alpha, git, tmp_path) -> None:
    """At 558 items am review list printed 3,231 lines with no way to ask for fewer: --limit N, as am log -n."""
    _ingested(alpha, tmp_path)
    code, _, err = am("--vault", str(alpha.root), "propose", CLAUDE_SESSION, "--extractor",
                      _script(tmp_path, EXTRACTOR))
    assert code == 0, err
    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    root = str(alpha.root)
    code, out, err = am("--vault", root, "review", "list", "--format", "json")
    assert code == 0, err
    whole = json.loads(out)
    assert whole["total"] == len(whole["items"]) == 4 and whole["counts"] == {"proposal": 3, "pending": 1}
    code, out, err = am("--vault", root, "review", "list", "--limit", "2", "--format", "json")
    assert code == 0, err
    cut = json.loads(out)
    assert cut["items"] == whole["items"][:2]  # the same items, with the same evidence (the session lines)
    assert cut["total"] == 4 and cut["counts"] == whole["counts"]
    code, out, err = am("--vault", root, "review", "list", "-n", "1")
    assert code == 0, err
    assert out.count("choices:") == 1
    assert out.rstrip().splitlines()[-1] == ("1 of 4 items (3 more: raise --limit) (no world given: stale facts "
                                             "not checked; give --repo R --branch B, or run in a code clone); "
                                             "decide with: am review accept|confirm|supersede|expire|reject ID")
    code, out, _ = am("--vault", root, "review", "list")
    assert out.count("choices:") == 4 and out.rstrip().splitlines()[-1].startswith("4 items (no world given")
    code, _, err = am("--vault", root, "review", "list", "--limit", "0")
    assert code == 2 and "Traceback" not in err


def test_a_world_given_before_the_decision_is_refused_not_ignored(alpha, git) -> None:
    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    head = git("rev-parse", "HEAD").strip()
    root = str(alpha.root)
    code, _, err = am("--vault", root, "review", "--branch", "feat-x", "accept", "fact-deploy")
    assert code == 2 and "--branch before 'accept' is the queue's world" in err, err
    assert "am review accept ... --branch" in err and "Traceback" not in err
    assert git("rev-parse", "HEAD").strip() == head  # nothing decided
    code, _, err = am("--vault", root, "review", "accept", "fact-deploy")
    assert code == 0, err
    assert alpha.get_fact("fact-deploy").status == "active"


def test_the_library_decide_refuses_a_world_for_any_decision_but_confirm(alpha, git) -> None:
    """Only confirm and supersede have a world; the library refused nothing and dropped one given to accept."""
    from am.errors import UsageError
    from am.upkeep.review import decide

    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    head = git("rev-parse", "HEAD").strip()
    for decision, world in (("accept", {"repo": "project-alpha"}), ("reject", {"branch": "main", "commit": "9fceb02"}),
                            ("expire", {"commit": "9fceb02"})):
        with pytest.raises(UsageError) as refused:
            decide(alpha, decision, "fact-deploy", reason="r", text="Deploys go out on Wednesdays.", **world)
        assert f"{decision} takes no {', '.join(world)}: only confirm and supersede have a world" in (
            refused.value.message)
    assert git("rev-parse", "HEAD").strip() == head and alpha.get_fact("fact-deploy").status == "pending-review"
    decide(alpha, "accept", "fact-deploy")
    assert alpha.get_fact("fact-deploy").status == "active"


def test_mcp_review_tools_list_and_decide_and_read_only_servers_cannot_decide(alpha, git, tmp_path) -> None:
    from am.mcp.server import Dispatcher, ServerOptions
    from am.mcp.tools import ToolOutput

    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    reader = Dispatcher(ServerOptions(vault_root=alpha.root, folder=tmp_path, read_only=True))
    try:
        listed = reader.call_sync("review_list", {}, "agent")
        assert isinstance(listed, ToolOutput) and [i["id"] for i in listed.data["items"]] == ["fact-deploy"]
        refused = reader.call_sync("review_decide", {"decision": "accept", "id": "fact-deploy"}, "agent")
        assert isinstance(refused, str) and refused.startswith("Error")
        assert "review_decide" not in {t.name for t in reader.tools()}
    finally:
        reader.close()
    writer = Dispatcher(ServerOptions(vault_root=alpha.root, folder=tmp_path))
    try:
        head = git("rev-parse", "HEAD").strip()
        done = writer.call_sync("review_decide", {"decision": "accept", "id": "fact-deploy"}, "agent")
        assert isinstance(done, ToolOutput), done
        assert git("rev-list", f"{head}..HEAD").split() == [done.data["commit"]]
        assert "Am-Op: review.accept" in git("log", "-1", "--format=%B")
    finally:
        writer.close()


def test_mcp_review_decide_refuses_a_world_for_an_expire_and_a_supersede_inherits_without_one(alpha, git,
                                                                                               tmp_path) -> None:
    """Only confirm and supersede take a world; MCP must not drop one silently, and without one a supersede's new
    fact inherits the old one's (a proposal's supersede is not moved to the server's clone)."""
    from am.mcp.server import Dispatcher, ServerOptions
    from am.mcp.tools import ToolOutput

    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    writer = Dispatcher(ServerOptions(vault_root=alpha.root, folder=tmp_path))
    try:
        head = git("rev-parse", "HEAD").strip()
        refused = writer.call_sync("review_decide", {"decision": "expire", "id": "fact-deploy", "reason": "gone",
                                                     "repo": "project-alpha"}, "agent")
        assert isinstance(refused, str) and "takes no repo" in refused
        assert git("rev-parse", "HEAD").strip() == head and git("status", "--porcelain") == ""
        done = writer.call_sync("review_decide", {"decision": "supersede", "id": "fact-deploy",
                                                  "text": "Deploys go out on Wednesdays."}, "agent")
        assert isinstance(done, ToolOutput), done
        assert git("rev-list", f"{head}..HEAD").split() == [done.data["commit"]]
        assert [r.get("repo") for r in done.data["records"]] == [None, None]
    finally:
        writer.close()


def test_the_interactive_queue_makes_one_commit_a_decision(alpha, git) -> None:
    """Keys one a line, as from a pipe (stdin is no terminal here); tests/test_review_keys.py runs a terminal too."""
    for fid, text in (("fact-a", "Deploys go out on Tuesdays."), ("fact-b", "Staging is in eu-west-1."),
                      ("fact-c", "The CI runs on every push.")):
        alpha.add_fact(text, topics=["project-alpha"], id=fid)
        alpha.set_fact_status(fid, "pending-review")
    head = git("rev-parse", "HEAD").strip()
    # fact-a: accept; fact-b: 'x' is not a choice, then reject with a reason; fact-c: next; then the end.
    code, out, err = am("--vault", str(alpha.root), "--actor", "carol", "review", "--interactive",
                        input="a\nx\nr\nwrong region\nn\n")
    assert code == 0, err
    assert "(1/3) [pending review] fact-a" in out and "[a]ccept" in out and "2 decision(s) made" in out
    assert git("rev-list", "--count", f"{head}..HEAD").strip() == "2"
    assert alpha.get_fact("fact-a").status == "active"
    assert alpha.get_fact("fact-b").status == "expired"
    assert alpha.get_fact("fact-b").reason == "rejected in review: wrong region"
    assert alpha.get_fact("fact-c").status == "pending-review"
    assert set(git("log", "-2", "--format=%an").split()) == {"carol"}


def test_the_clerk_does_not_propose_what_the_vault_already_holds(alpha, git, tmp_path) -> None:
    """A proposal whose statement a holding fact of its world already says (about any topics: a proposal also
    names its session) is skipped with that fact's id; an expired one does not count (docs/decisions/writes.md)."""
    from am.sessions.clerk import propose

    known = alpha.add_fact("getUser is limited to 100  requests a minute per client.", topics=["project-alpha"])
    ended = alpha.add_fact("the Alpha rate limits live in src/api/limits.py, not in the handlers.",
                           topics=["project-alpha"]).record.id
    alpha.expire_fact(ended, reason="moved")
    _ingested(alpha, tmp_path)
    report = propose(alpha, CLAUDE_SESSION)
    assert [text for _, text, _ in report.proposed] == [
        "the Alpha rate limits live in src/api/limits.py, not in the handlers."]
    assert report.skipped == [("getUser is limited to 100 requests a minute per client.", (6,),
                               f"already recorded as {known.record.id} (active)")]


def test_a_queue_listed_without_a_world_says_stale_facts_were_not_checked(alpha, git, tmp_path) -> None:
    """Run in the vault (no clone, no --repo), am review list said '1 item' and nothing of stale facts, which
    it never looked for; only an empty queue said '(no world given: stale facts not checked)'."""
    alpha.add_fact("Deploys go out on Tuesdays.", topics=["project-alpha"], id="fact-deploy")
    alpha.set_fact_status("fact-deploy", "pending-review")
    code, out, err = am("--vault", str(alpha.root), "review", "list")
    assert code == 0, err
    assert out.splitlines()[-1] == ("1 item (no world given: stale facts not checked; give --repo R --branch B, "
                                    "or run in a code clone); decide with: am review accept|confirm|supersede|"
                                    "expire|reject ID")
    code, out, err = am("--vault", str(alpha.root), "review", "list", "--kind", "pending")
    assert code == 0, err
    assert out.splitlines()[-1] == "1 item; decide with: am review accept|confirm|supersede|expire|reject ID"
