"""Issue 33.3: a fact missing ``status``, ``confidence`` or ``provenance`` is invalid and holds nowhere.

Committed past the hooks (``git commit --no-verify``), such a file used to be served in every pack as an
active, medium, "human" fact. Now it is in no pack and no listing, named by their unreadable-or-invalid note,
reported by ``am check``, and ``am why`` says which key is missing.
"""

from __future__ import annotations

import json

import pytest

from am.errors import InvalidRecordError
from am.records.codec import parse_record
from am.vault import Vault
from conftest import run_git
from test_worlds_trust import am

PATH = "facts/2026/11/02/fact-nostatus.md"
TEXT = ("---\ntype: fact\nid: fact-nostatus\ntopics: [project-alpha]\nconfidence: high\nprovenance: human\n"
        "created: 2026-11-02T10:00:00+00:00\n---\nThe alpha service deletes users at night.\n")


def _commit_past_the_hooks(root: object, path: str, text: str) -> None:
    from pathlib import Path

    file = Path(str(root)) / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
    run_git(file.parents[4], "add", path)
    run_git(file.parents[4], "commit", "-q", "--no-verify", "-m", "a fact written by hand")


def test_a_fact_without_status_committed_with_no_verify_is_in_no_pack_and_named(alpha: Vault) -> None:
    root = alpha.root
    alpha.add_fact("The alpha service keeps users in Postgres.", topics=["project-alpha"], id="fact-pg")
    alpha.close()
    _commit_past_the_hooks(root, PATH, TEXT)

    code, out, err = am("--vault", str(root), "slice", "--topic", "project-alpha")
    assert code == 0, err
    assert "keeps users in Postgres" in out
    assert "deletes users at night" not in out and "fact-nostatus" not in out.split("unreadable")[0]
    assert PATH in out + err  # the note names the file

    code, out, err = am("--vault", str(root), "slice", "--topic", "project-alpha", "--format", "json")
    data = json.loads(out)
    assert "deletes users at night" not in out and data["vault"]["unreadable"] == [PATH]
    assert data["holds"]["facts"] == 1  # fact-pg only

    code, out, err = am("--vault", str(root), "search", "deletes users", "--format", "json")
    assert "fact-nostatus" not in out.replace(PATH, "")

    code, out, err = am("--vault", str(root), "fact", "list", "--format", "json")
    assert code == 0 and "fact-pg" in out and "deletes users" not in out

    code, out, err = am("--vault", str(root), "why", "fact-nostatus")
    assert code != 0 and "status" in out + err and "required" in out + err and PATH in out + err

    code, out, err = am("--vault", str(root), "check", "--format", "json")
    issues = [i for i in json.loads(out)["issues"] if i.get("path") == PATH]
    assert issues and any("status" in i["message"] for i in issues), out


@pytest.mark.parametrize("key", ["status", "confidence", "provenance"])
def test_each_missing_key_is_named(key: str) -> None:
    full = TEXT.replace("confidence: high\n", "status: active\nconfidence: high\n")
    assert parse_record(full, PATH).status == "active"
    lines = [line for line in full.split("\n") if not line.startswith(f"{key}:")]
    with pytest.raises(InvalidRecordError) as err:
        parse_record("\n".join(lines), PATH)
    assert err.value.field == key and PATH in str(err.value)


def test_a_relation_without_status_is_invalid_a_topic_without_one_is_not() -> None:
    with pytest.raises(InvalidRecordError) as err:
        parse_record("---\ntype: relation\nid: a--part-of--b\nrel: part-of\nfrom: a\nto: b\n---\n",
                     "relations/a--part-of--b.md")
    assert err.value.field == "status"
    assert parse_record("---\ntype: topic\nid: project-b\ntitle: B\n---\n", "topics/project-b.md").status == "active"
