"""Names that look alike (Unicode TS #39): a new name may not pass for another record's.

``dеploy`` with a Cyrillic е (U+0435) and ``deploy`` look the same; a ``[[link]]`` typed on one keyboard
or the other reached different records. A new topic title, alias, file name or id that looks like a name
in use is refused (naming both), as is a word mixing scripts; records that already have such names are
read as ever, and am check warns about the pair. The git CLI says what was committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from am.errors import CollisionError, InvalidRecordError
from am.records.lookalikes import lookalike_pairs, looks, mixed_script_word
from am.vault import Vault
from conftest import run_git, subprocess_env

CYRILLIC_E = "\u0435"
DEPLOY_CYRILLIC = f"d{CYRILLIC_E}ploy"  # looks like "deploy"


def _am(vault_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "am.cli.main", "--vault", str(vault_path), *args],
                          capture_output=True, text=True, env=subprocess_env())


def _hand_topic(vault_path: Path, rid: str, title: str) -> None:
    """Commit a topic file written by hand (Obsidian), as am's own rule would not let it in."""
    (vault_path / "topics" / f"{rid}.md").write_text(
        f"---\ntype: topic\nid: {rid}\nkind: concept\ntitle: {title}\ncreated: 2026-12-01T10:00:00+00:00\n---\n",
        encoding="utf-8")
    run_git(vault_path, "add", "-A")
    run_git(vault_path, "commit", "-q", "-m", "by hand")


def test_looks_follow_the_confusables_data_but_leave_ascii_alone() -> None:
    assert looks(DEPLOY_CYRILLIC) & looks("deploy")
    assert looks("ｄｅｐｌｏｙ") & looks("Deploy")  # fullwidth letters (NFKD)
    assert looks("\u0412log") & looks("blog")  # Cyrillic capital ve looks like B
    assert looks("\u0441\u043e\u0441\u043e") & looks("coco")  # wholly Cyrillic, and like a Latin name
    assert not looks("done") & looks("clone")  # TS #39 equates d and cl; ASCII is left as typed
    assert not looks("api-v1") & looks("api-vl")
    assert not looks("деплой") & looks("deploy")
    assert lookalike_pairs([("deploy", "a"), (DEPLOY_CYRILLIC, "b"), ("Deploy", "a"), ("деплой", "c")]) == [
        (DEPLOY_CYRILLIC, "b", "deploy", "a")]


@pytest.mark.parametrize("name", ["деплой", "東京タワー", "한국어 문서", "Redis кластер", "Kubernetes-кластер",
                                  "Café", "Grüße", "Redis集群", "ελληνικά"])
def test_words_in_one_script_are_not_mixed(name: str) -> None:
    assert mixed_script_word(name) is None


@pytest.mark.parametrize(("name", "word"), [(DEPLOY_CYRILLIC, DEPLOY_CYRILLIC), ("Ωmega build", "Ωmega"),
                                            ("ok pаypal", "pаypal")])
def test_a_word_in_two_scripts_is_mixed(name: str, word: str) -> None:
    found = mixed_script_word(name)
    assert found is not None and found[0] == word


def test_a_new_title_or_alias_that_looks_like_a_name_in_use_is_refused_naming_both(vault: Vault,
                                                                                    vault_path: Path) -> None:
    assert _am(vault_path, "topic", "add", "concept-deploy", "--title", "deploy").returncode == 0
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    for args, what in [(("--title", DEPLOY_CYRILLIC), "title"), (("--title", "X", "--alias", "D" + DEPLOY_CYRILLIC[1:]),
                                                                  "alias")]:
        done = _am(vault_path, "topic", "add", "concept-other", *args)
        assert done.returncode == 6, done.stderr
        assert f"{what} '" in done.stderr and "looks like 'deploy'" in done.stderr, done.stderr
        assert "U+0435 CYRILLIC SMALL LETTER IE" in done.stderr and "concept-deploy" in done.stderr
        assert "use concept-deploy" in done.stderr and f"choose another {what}" in done.stderr
        assert "Traceback" not in done.stderr
    # A word mixing scripts, like nothing in the vault: refused all the same (exit 5, the field named).
    done = _am(vault_path, "topic", "add", "concept-omega", "--title", "Ωmega")
    assert done.returncode == 5 and "'title'" in done.stderr and "mixes Greek and Latin" in done.stderr, done.stderr
    assert "U+03A9 GREEK CAPITAL LETTER OMEGA" in done.stderr
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head
    assert run_git(vault_path, "status", "--porcelain") == ""
    # Names in another script that pass for nothing in use are welcome.
    for rid, title in [("concept-deploy-ru", "деплой"), ("concept-tokyo", "東京タワー"), ("concept-ru", "Redis кластер")]:
        done = _am(vault_path, "topic", "add", rid, "--title", title)
        assert done.returncode == 0, done.stderr
    assert run_git(vault_path, "rev-list", "--count", f"{head}..HEAD").strip() == "3"


def test_a_name_that_looks_like_an_older_lookalike_is_refused_and_the_older_is_still_read(
        vault: Vault, vault_path: Path) -> None:
    """A topic written by hand before the rule (title dеploy, Cyrillic е) stays readable; am check warns about
    the pair; a new topic deploy, or a fact whose id looks like it, is refused, naming the older one."""
    vault.add_topic(title="Redis", kind="tool", id="tool-redis")
    _hand_topic(vault_path, "concept-hand", DEPLOY_CYRILLIC)
    _hand_topic(vault_path, "concept-coco", "\u0441\u043e\u0441\u043e")  # Cyrillic сосо
    vault.cache().refresh()
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    with pytest.raises(CollisionError, match=r"title 'deploy' \(all ASCII\) looks like 'd.ploy' .*concept-hand"):
        vault.add_topic(title="deploy", id="concept-deploy")
    with pytest.raises(CollisionError, match=r"id 'coco' \(all ASCII\) looks like .*concept-coco"):
        vault.add_fact("Coco is the build box.", topics=["tool-redis"], id="coco")
    with pytest.raises(InvalidRecordError, match="mixes Cyrillic and Latin"):
        vault.add_topic(title="pаypal", id="concept-pay")
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head
    shown = _am(vault_path, "topic", "show", "concept-hand")
    assert shown.returncode == 0 and DEPLOY_CYRILLIC in shown.stdout, shown.stderr
    # am check: a warning on the pair (not an error; --strict counts it), nothing on the topics apart.
    _hand_topic(vault_path, "concept-deploy", "deploy")
    done = _am(vault_path, "check", "--format", "json")
    assert done.returncode == 0, done.stderr
    issues = [i for i in json.loads(done.stdout)["issues"] if i["code"] == "lookalike-name"]
    assert [(i["severity"], i["path"]) for i in issues] == [("warning", "topics/concept-hand.md")], issues
    assert "topics/concept-deploy.md" in issues[0]["message"] and "U+0435" in issues[0]["message"]
    strict = _am(vault_path, "check", "--strict")
    assert strict.returncode != 0


def test_mcp_topic_add_and_fact_add_with_an_id_are_held_to_the_same_rule(vault: Vault, vault_path: Path) -> None:
    from am.mcp.server import Dispatcher, ServerOptions

    vault.add_topic(title="deploy", id="concept-deploy")
    _hand_topic(vault_path, "concept-coco", "\u0441\u043e\u0441\u043e")  # Cyrillic сосо, by hand
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    d = Dispatcher(ServerOptions(vault_root=vault_path, folder=vault_path))
    try:
        said = d.call_sync("topic_add", {"title": DEPLOY_CYRILLIC, "id": "concept-other"}, "agent")
        assert isinstance(said, str) and "looks like 'deploy'" in said and "concept-deploy" in said, said
        said = d.call_sync("fact_add", {"text": "A fact.", "topics": ["concept-deploy"], "id": "coco"}, "agent")
        assert isinstance(said, str) and "looks like" in said and "concept-coco" in said, said
    finally:
        d.close()
    assert run_git(vault_path, "rev-parse", "HEAD").strip() == head


def test_a_rename_is_held_to_the_name_rule_for_the_names_it_brings(vault: Vault, vault_path: Path) -> None:
    """am topic rename gave a topic a title another topic has (or one that looks like it) without a word:
    [[deploy]] links then reached either. Its own names (the title kept, the old title as alias) are its own."""
    vault.add_topic(title="deploy", id="concept-deploy")
    vault.add_topic(title="X", id="concept-x")
    head = run_git(vault_path, "rev-parse", "HEAD").strip()
    for title, said in [("deploy", "title 'deploy' is already a name of concept-deploy"),
                        (DEPLOY_CYRILLIC, "looks like 'deploy'")]:
        done = _am(vault_path, "topic", "rename", "concept-x", "concept-y", "--title", title)
        assert done.returncode == 6 and said in done.stderr, done.stderr
    done = _am(vault_path, "topic", "rename", "concept-x", "concept-deploy-two")
    assert done.returncode == 0, done.stderr  # the id is new; the title X it keeps is its own
    done = _am(vault_path, "topic", "rename", "concept-deploy-two", "concept-deploy-two", "--title", "Deploy tool")
    assert done.returncode == 0, done.stderr  # its old title X becomes an alias: its own name
    assert run_git(vault_path, "rev-list", "--count", f"{head}..HEAD").strip() == "2"
