"""Issue 34 items 1-2: a fact like a holding one is noticed when written, and the vault's look-alike pairs are reviewed.

"Deploys happen on Tuesdays." then "... Wednesdays." on the same topic: the second is written and names the
first as a likely update (CLI JSON, MCP), am review lists the pair, and its supersede is one commit after which
only Wednesday holds. A restatement (case, punctuation, a stop word) writes nothing; the same words on another
topic or in another world are news. The policy (warn / refuse / allow) is the vault's, overridden per write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_git
from test_worlds_trust import am

from am.mcp.server import Dispatcher, ServerOptions
from am.mcp.tools import ToolOutput
from am.vault import Vault
from am.writes.similar import classify

TUESDAY = "Deploys happen on Tuesdays."
WEDNESDAY = "Deploys happen on Wednesdays."


def _commits(root: Path) -> int:
    return int(run_git(root, "rev-list", "--count", "HEAD").strip())


def _add(root: Path, text: str, *args: str) -> tuple[int, dict[str, object], str]:
    code, out, err = am("--vault", str(root), "fact", "add", text, "--topic", "project-alpha", *args,
                        "--format", "json")
    return code, (json.loads(out) if out.strip() else {}), err


def _holding(root: Path) -> list[str]:
    with Vault.open(root) as vault:
        return sorted(f.body.strip() for f in vault.list_facts(status="active"))


def test_tuesday_then_wednesday_is_named_listed_and_superseded_in_one_commit(alpha: Vault,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = alpha.root
    monkeypatch.setenv("AM_NOW", "2026-12-01T10:00:00+00:00")
    code, first, _ = _add(root, TUESDAY)
    monkeypatch.setenv("AM_NOW", "2026-12-02T10:00:00+00:00")
    assert code == 0 and first["created"] is True and "similar" not in first
    first_id = first["records"][0]["id"]  # type: ignore[index]
    code, second, _ = _add(root, WEDNESDAY)
    assert code == 0 and second["created"] is True and second["commit"]
    similar = second["similar"]
    assert [(s["id"], s["text"], s["kind"]) for s in similar] == [(first_id, TUESDAY, "candidate")]  # type: ignore[union-attr]
    assert "weekday" in similar[0]["why"] and f"am fact supersede {first_id}" in similar[0]["next"]  # type: ignore[index]
    second_id = second["records"][0]["id"]  # type: ignore[index]

    code, out, _ = am("--vault", str(root), "review", "list", "--kind", "similar", "--format", "json")
    items = json.loads(out)["items"]
    assert code == 0 and [(i["kind"], i["id"]) for i in items] == [("similar", second_id)]
    assert [f["text"] for f in items[0]["facts"]] == [WEDNESDAY, TUESDAY]
    code, out, _ = am("--vault", str(root), "check")
    assert "similar-facts" in out and first_id in out

    before = _commits(root)
    code, out, err = am("--vault", str(root), "review", "supersede", second_id)
    assert code == 0, err
    assert _commits(root) == before + 1
    assert _holding(root) == [WEDNESDAY]
    assert json.loads(am("--vault", str(root), "review", "list", "--kind", "similar", "--format", "json")[1])[
        "items"] == []


def test_the_mcp_answer_names_the_holding_fact(alpha: Vault) -> None:
    alpha.add_fact(TUESDAY, topics=["project-alpha"])
    first = alpha.list_facts(status="active")[0]
    d = Dispatcher(ServerOptions(vault_root=alpha.root, folder=alpha.root))
    try:
        out = d.call_sync("fact_add", {"text": WEDNESDAY, "topics": ["project-alpha"]}, "agent")
        assert isinstance(out, ToolOutput)
        assert out.data["created"] is True and out.data["similar"][0]["id"] == first.id
        assert "fact_supersede" in out.data["similar"][0]["next"] and "similar: fact" in out.text
        again = d.call_sync("fact_add", {"text": "deploys happen on the tuesdays", "topics": ["project-alpha"]}, "x")
        assert isinstance(again, ToolOutput) and again.data["created"] is False and again.data["id"] == first.id
    finally:
        d.close()


def test_a_restatement_is_not_written_twice_but_another_topic_or_world_is(alpha: Vault) -> None:
    root = alpha.root
    code, first, _ = _add(root, TUESDAY)
    before = _commits(root)
    code, again, _ = _add(root, "deploys happen on the tuesdays")  # case, punctuation, one stop word
    assert code == 0 and again["created"] is False and again["commit"] is None
    assert again["id"] == first["records"][0]["id"]  # type: ignore[index]
    assert _commits(root) == before
    code, out, _ = am("--vault", str(root), "fact", "add", "deploys happen on the tuesdays", "--topic", "project-beta",
                      "--create-topic", "--format", "json")
    assert code == 0 and json.loads(out)["created"] is True
    code, elsewhere, _ = _add(root, "deploys happen on the tuesdays", "--repo", "project-alpha", "--branch", "main",
                              "--unverified")
    assert code == 0 and elsewhere["created"] is True
    assert _commits(root) == before + 2


def _policy(root: Path, value: str) -> None:
    path = root / ".am" / "vault.yml"
    path.write_text(path.read_text(encoding="utf-8") + f"similar: {value}\n", encoding="utf-8")
    run_git(root, "commit", "-q", "-am", "similar policy")


def test_refuse_writes_nothing_and_the_flag_overrides_it(alpha: Vault) -> None:
    root = alpha.root
    _add(root, TUESDAY)
    _policy(root, "refuse")
    before = _commits(root)
    code, out, err = _add(root, WEDNESDAY)
    assert code == 6 and "Tuesdays" in err and "--if-similar allow" in err
    assert _commits(root) == before
    code, written, _ = _add(root, WEDNESDAY, "--if-similar", "allow")
    assert code == 0 and written["created"] is True and "similar" not in written
    assert _commits(root) == before + 1


def test_a_policy_am_does_not_know_is_named(alpha: Vault) -> None:
    _policy(alpha.root, "shout")
    before = _commits(alpha.root)
    code, _, err = _add(alpha.root, TUESDAY)
    assert code == 2 and "similar: 'shout'" in err and "Traceback" not in err
    assert _commits(alpha.root) == before


def test_keep_both_is_recorded_in_the_vault_and_not_asked_again(alpha: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    root = alpha.root
    monkeypatch.setenv("AM_NOW", "2026-12-01T10:00:00+00:00")
    _add(root, "The API timeout is 30 seconds.")
    monkeypatch.setenv("AM_NOW", "2026-12-02T10:00:00+00:00")
    code, second, _ = _add(root, "The API timeout is 60 seconds.")
    assert second["similar"]
    newer = second["records"][0]["id"]  # type: ignore[index]
    before = _commits(root)
    code, out, err = am("--vault", str(root), "review", "keep-both", newer, "--reason", "two APIs")
    assert code == 0, err
    assert _commits(root) == before + 1
    kept = run_git(root, "show", "HEAD:.am/kept-similar.txt")
    assert newer in kept and "two APIs" in kept
    assert json.loads(am("--vault", str(root), "review", "list", "--kind", "similar", "--format", "json")[1])[
        "items"] == []
    assert "similar-facts" not in am("--vault", str(root), "check")[1]
    assert run_git(root, "status", "--porcelain").strip() == ""


@pytest.mark.parametrize(("new", "old", "kind"), [
    ("deploys happen on the tuesdays", TUESDAY, "same"),
    (WEDNESDAY, TUESDAY, "candidate"),
    ("Alpha uses Memcached for sessions.", "Alpha uses Redis for sessions.", "candidate"),
    ("The batch lookup must not pass consistent=True.", "The batch lookup must pass consistent=True.", "candidate"),
    ("部署在周三进行。", "部署在周二进行。", "candidate"),
    ("部署在周二进行", "部署在周二进行。", "same"),
    ("发布前不需要审批", "发布前需要审批", "candidate"),
    ("接口超时是三十秒", "接口超时是60秒", "candidate"),
    ("Logs are kept for 30 days.", "The frontend is written in TypeScript.", None),
    ("日志保留三十天", "前端使用TypeScript编写", None),
])
def test_the_classifier(new: str, old: str, kind: str | None) -> None:
    assert classify(new, old).kind == kind
