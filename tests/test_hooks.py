"""Git hooks, run for real by the git CLI: hand commits are validated, chained hooks kept, code commits watched."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import GIT_IDENTITY, run_git

from am.cli.main import cli
from am.upkeep.hookfiles import CODE_HOOKS, MARKER, VAULT_HOOKS

REPO_ROOT = Path(__file__).resolve().parent.parent


def am(*args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def git_commit(root: Path, message: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Commit what is staged with the git CLI, hooks and all."""
    return subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], capture_output=True, text=True,
                          env={**os.environ, **GIT_IDENTITY, **env})


def head(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def relation_text(rel: str, a: str, b: str) -> str:
    return (f"---\ntype: relation\nid: {a}--{rel}--{b}\nrel: {rel}\nfrom: {a}\nto: {b}\nstatus: active\n"
            f"created: 2026-11-01T10:00:00+00:00\n---\n[[{a}]] {rel} [[{b}]].\n")


def fact_text(fid: str, body: str) -> str:
    return (f"---\ntype: fact\nid: {fid}\ntopics: [project-alpha]\nstatus: active\nconfidence: high\n"
            f"provenance: human\ncreated: 2026-11-01T10:00:00+00:00\n---\n{body}\n")


@pytest.fixture
def hooked(alpha: object, vault_path: Path) -> object:
    """The alpha vault with tool-redis, and am's hooks installed."""
    alpha.add_topic(title="Redis", kind="tool", id="tool-redis")  # type: ignore[attr-defined]
    am("--vault", str(vault_path), "hooks", "install")
    return alpha


def test_shims_run_the_installed_am_in_isolated_mode(hooked: object, vault_path: Path) -> None:
    for name in VAULT_HOOKS:
        text = (vault_path / ".git" / "hooks" / name).read_text()
        lines = text.splitlines()
        assert lines[0] == "#!/bin/sh" and lines[1] == MARKER
        runs = [ln.strip() for ln in lines if ln.strip().startswith("exec ")]
        # The installed am first, in isolated mode, through the entry without click; then the am on PATH.
        assert runs[0].startswith("exec /") and " -I " in runs[0] and "am.cli.hookrun" in runs[0]
        assert runs[0].endswith(f" {name} \"$@\"")
        assert runs[1] == f'exec am hook {name} "$@"' and lines[-1] == "exit 0"
        assert os.access(vault_path / ".git" / "hooks" / name, os.X_OK)
    for name in (*VAULT_HOOKS, *(f"code-{n}" for n in CODE_HOOKS)):
        shipped = (REPO_ROOT / "hooks" / name).read_text()
        assert MARKER in shipped and "exec am " in shipped and os.access(REPO_ROOT / "hooks" / name, os.X_OK)


def test_unknown_relation_type_is_refused_and_head_stays(hooked: object, vault_path: Path) -> None:
    before = head(vault_path)
    rel = "relations/2026/11/project-alpha--likes--tool-redis.md"
    write(vault_path, rel, relation_text("likes", "project-alpha", "tool-redis"))
    run_git(vault_path, "add", rel)
    proc = git_commit(vault_path, "hand-written relation")
    assert proc.returncode != 0
    assert rel in proc.stderr and "'likes' is not allowed" in proc.stderr and "depends-on" in proc.stderr
    assert head(vault_path) == before
    assert run_git(vault_path, "log", "--format=%s", "-1").strip() != "hand-written relation"


def test_valid_hand_commit_becomes_memory(hooked: object, vault_path: Path) -> None:
    from am.vault import Vault

    rel = "relations/2026/11/project-alpha--depends-on--tool-redis.md"
    fact = "facts/2026/11/01/fact-alpha-hand-written.md"
    write(vault_path, rel, relation_text("depends-on", "project-alpha", "tool-redis"))
    write(vault_path, fact, fact_text("fact-alpha-hand-written", "Alpha keeps sessions in Redis zebracorn."))
    run_git(vault_path, "add", "-A")
    proc = git_commit(vault_path, "by hand in Obsidian")
    assert proc.returncode == 0, proc.stderr
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    with Vault.open(vault_path) as v:
        assert v.get_fact("fact-alpha-hand-written").confidence == "high"
        assert [r.id for r in v.list_relations(topic="tool-redis")] == ["project-alpha--depends-on--tool-redis"]
    # The cache and the commands that read through it see the hand commit too.
    try:
        from am.cache.index import Index
    except ImportError:
        Index = None  # noqa: N806  (the cache is another module; without it there is nothing more to check)
    if Index is not None:
        with Vault.open(vault_path) as v, Index.open(v) as index:
            assert [h.id for h in index.search("zebracorn")] == ["fact-alpha-hand-written"]
    commands = {c for c in cli.commands}
    if "search" in commands:
        out = am("--vault", str(vault_path), "search", "zebracorn", "--format", "json")
        assert "fact-alpha-hand-written" in out
    if "slice" in commands:
        out = am("--vault", str(vault_path), "slice", "--topic", "project-alpha", "--format", "json")
        assert "fact-alpha-hand-written" in out


def test_post_commit_prints_lint_warnings(hooked: object, vault_path: Path) -> None:
    fact = "facts/2026/11/01/fact-with-dangling.md"
    write(vault_path, fact, fact_text("fact-with-dangling", "See [[tool-nowhere]] for details."))
    run_git(vault_path, "add", fact)
    proc = git_commit(vault_path, "dangling link")
    assert proc.returncode == 0, proc.stderr
    assert "dangling-link" in proc.stderr and "tool-nowhere" in proc.stderr


def test_secrets_refused_by_the_hook_with_an_override(hooked: object, vault_path: Path) -> None:
    from test_secrets import _cases

    from am.records.secrets import scan_fields

    # The hook must refuse exactly what the am write path refuses (scan_fields over the body).
    by_kind: dict[str, str] = {}
    for kind, text, _ in _cases():
        if kind not in by_kind and scan_fields({"body": text + "\n"}):
            by_kind[kind] = text
    families = sorted(by_kind)
    assert len(families) >= 10
    # One commit per family would take a while; a few in full, the rest in one file each staged together.
    for i, kind in enumerate(families[:2]):
        fact = f"facts/2026/11/01/fact-secret-{i}.md"
        write(vault_path, fact, fact_text(f"fact-secret-{i}", by_kind[kind]))
        run_git(vault_path, "add", fact)
        before = head(vault_path)
        proc = git_commit(vault_path, "oops")
        assert proc.returncode != 0, kind
        assert kind in proc.stderr and fact in proc.stderr
        assert head(vault_path) == before
        run_git(vault_path, "reset", "-q", "--", fact)
        (vault_path / fact).unlink()
    staged = []
    for i, kind in enumerate(families):
        fact = f"facts/2026/11/02/fact-secret-all-{i}.md"
        write(vault_path, fact, fact_text(f"fact-secret-all-{i}", by_kind[kind]))
        staged.append((kind, fact))
    run_git(vault_path, "add", "-A")
    before = head(vault_path)
    proc = git_commit(vault_path, "many secrets")
    assert proc.returncode != 0 and head(vault_path) == before
    for kind, fact in staged:
        assert fact in proc.stderr, f"{kind} not caught"
    proc = git_commit(vault_path, "I know these are fake", AM_ALLOW_SECRET="1")
    assert proc.returncode == 0, proc.stderr
    assert head(vault_path) != before


def test_chained_hook_runs_and_uninstall_restores_it(alpha: object, vault_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "chained.log"
    original = f"#!/bin/sh\necho \"pre-commit ran $#\" >> {log}\n"
    hook = vault_path / ".git" / "hooks" / "pre-commit"
    hook.write_text(original)
    hook.chmod(0o755)
    out = am("--vault", str(vault_path), "hooks", "install", "--format", "json")
    actions = {a["name"]: a["action"] for a in json.loads(out)}
    assert actions["pre-commit"] == "chained" and actions["post-commit"] == "installed"
    assert MARKER in hook.read_text()
    again = json.loads(am("--vault", str(vault_path), "hooks", "install", "--format", "json"))
    assert {a["action"] for a in again} == {"updated"}
    write(vault_path, "notes.txt", "not a record\n")
    run_git(vault_path, "add", "notes.txt")
    assert git_commit(vault_path, "plain file").returncode == 0
    assert log.read_text() == "pre-commit ran 0\n"
    am("--vault", str(vault_path), "hooks", "uninstall")
    assert hook.read_text() == original and os.access(hook, os.X_OK)
    for name in VAULT_HOOKS[1:]:
        assert not (vault_path / ".git" / "hooks" / name).exists()


def test_hooks_never_run_code_from_the_vault(hooked: object, vault_path: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = f"open({str(marker)!r}, 'w').write('x')\n"
    for rel in ("am/__init__.py", "am/cli/__init__.py", "am/cli/main.py", "sitecustomize.py", "usercustomize.py"):
        write(vault_path, rel, payload)
    run_git(vault_path, "add", "-A")
    proc = git_commit(vault_path, "planted code", PYTHONPATH=str(vault_path))
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()


# ------------------------------------------------------------------ code repositories


@pytest.fixture
def code_repo(tmp_path: Path) -> Path:
    root = tmp_path / "alpha-code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(root))
    for rel in ("src/api/users.py", "src/api/orders.py", "src/db/pool.py", "docs/api.md", "README.md"):
        write(root, rel, f"# {rel}\n")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-q", "-m", "init")
    return root


def test_code_commit_reports_exactly_the_watching_facts(alpha: object, vault_path: Path, code_repo: Path) -> None:
    v = alpha
    am("--vault", str(vault_path), "hooks", "install", "--code-repo", str(code_repo), "--repo", "project-alpha")
    watch = {
        "fact-users-folder": ("project-alpha", ["src/api/"]),
        "fact-users-file": ("project-alpha", ["src/api/users.py"]),
        "fact-docs-glob": ("project-alpha", ["docs/*.md"]),
        "fact-db": ("project-alpha", ["src/db"]),
        "fact-other-repo": ("project-beta", ["src/api/users.py"]),
        "fact-no-paths": ("project-alpha", []),
        "fact-prefix-trap": ("project-alpha", ["src/ap"]),
    }
    for fid, (repo, paths) in watch.items():
        v.add_fact(f"{fid} holds.", topics=["project-alpha"], id=fid, repo=repo, paths=paths,  # type: ignore[attr-defined]
                   branch="main", unverified=repo != "project-alpha")
    v.add_fact("expired one.", topics=["project-alpha"], id="fact-expired", repo="project-alpha",  # type: ignore[attr-defined]
               paths=["src/api/"], branch="main")
    v.expire_fact("fact-expired", reason="gone")  # type: ignore[attr-defined]
    vault_before = head(vault_path)

    write(code_repo, "src/api/users.py", "def get_users(ids): ...\n")
    write(code_repo, "docs/api.md", "# API\nbatch\n")
    run_git(code_repo, "add", "-A")
    proc = git_commit(code_repo, "batch users API")
    assert proc.returncode == 0, proc.stderr
    # Staleness is derived per world: the vault is not written, the committer is told.
    assert head(vault_path) == vault_before
    line = next(line for line in proc.stderr.splitlines() if "stale on project-alpha@main" in line)
    named = set(re.findall(r"(fact-[a-z-]+) \(", line))
    assert named == {"fact-users-folder", "fact-users-file", "fact-docs-glob"}
    stale = json.loads(am("--vault", str(vault_path), "stale", "--repo", "project-alpha", "--branch", "main",
                          "--format", "json"))
    assert {s["id"] for s in stale["stale"]} == named

    # A commit that touches nothing watched makes nothing new stale, and says nothing.
    write(code_repo, "README.md", "readme\n")
    run_git(code_repo, "add", "-A")
    proc = git_commit(code_repo, "readme")
    assert proc.returncode == 0 and "stale on" not in proc.stderr
    assert head(vault_path) == vault_before

    am("--vault", str(vault_path), "hooks", "uninstall", "--code-repo", str(code_repo))
    assert not (code_repo / ".git" / "hooks" / "post-commit").exists()


def test_the_stale_advice_never_takes_a_fact_off_its_branch(alpha: object, vault_path: Path, code_repo: Path) -> None:
    """On an experiment branch: confirm for that branch's facts, a branch-scoped supersede for main's; both work."""
    vault = str(vault_path)
    am("--vault", vault, "hooks", "install", "--code-repo", str(code_repo), "--repo", "project-alpha")
    am("--vault", vault, "fact", "add", "Users are fetched one by one.", "--topic", "project-alpha", "--id",
       "fact-main", "--repo", "project-alpha", "--branch", "main", "--path", "src/api/users.py")
    run_git(code_repo, "switch", "-q", "-c", "exp2")
    am("--vault", vault, "fact", "add", "exp2 is trying batches.", "--topic", "project-alpha", "--id", "fact-exp",
       "--repo", "project-alpha", "--branch", "exp2", "--path", "src/api/users.py")
    write(code_repo, "src/api/users.py", "def get_users(ids): ...\n")
    run_git(code_repo, "add", "-A")
    proc = git_commit(code_repo, "batch users")
    assert proc.returncode == 0, proc.stderr
    x = head(code_repo)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("am: ")]
    assert lines[0] == ("am: this commit makes 2 facts stale on project-alpha@exp2: fact-exp (src/api/users.py), "
                        "fact-main (src/api/users.py)")
    assert lines[1] == f"am: check fact-exp, then re-confirm with: am fact confirm ID --commit {x[:10]}"
    assert lines[2] == "am: or supersede it where the code is now: am fact supersede ID TEXT --reason WHY --here"
    assert lines[3] == ("am: fact-main is main's: check it on exp2; if it no longer holds there: am fact supersede ID "
                        "\"what holds there\" --branch exp2 --reason \"...\" (confirming it here would take it off main)")
    # Following the advice: both are one commit each, and main keeps its fact.
    am("--vault", vault, "fact", "confirm", "fact-exp", "--commit", x[:10])
    am("--vault", vault, "fact", "supersede", "fact-main", "Users are fetched in batches.", "--branch", "exp2",
       "--id", "fact-exp2-batch", "--reason", "exp2 batches")
    assert json.loads(am("--vault", vault, "stale", "--repo", "project-alpha", "--branch", "exp2",
                         "--format", "json"))["stale"] == []
    why = json.loads(am("--vault", vault, "why", "fact-main", "--repo", "project-alpha", "--branch", "main",
                        "--format", "json"))
    assert why["holds"] is True
    # Merged into main while exp2 is still there, exp2's fact stays exp2's: confirming at main's commit is
    # refused (it would take the fact off exp2), and says to delete the merged branch first.
    run_git(code_repo, "switch", "-q", "main")
    run_git(code_repo, "merge", "-q", "--no-ff", "-m", "merge exp2", "exp2")
    write(code_repo, "src/api/users.py", "def get_users(ids, limit=100): ...\n")
    run_git(code_repo, "add", "-A")
    proc = git_commit(code_repo, "limit")
    m = head(code_repo)
    assert "fact-exp" in proc.stderr and "are exp2's: check them on main" in proc.stderr, proc.stderr
    result = CliRunner().invoke(cli, ["--vault", vault, "fact", "confirm", "fact-exp", "--commit", m[:10]])
    assert result.exit_code != 0 and "git branch -d exp2" in str(result.exception), result.output
    run_git(code_repo, "branch", "-d", "exp2")  # merged, so git deletes it; nothing is left to take the fact out of
    am("--vault", vault, "fact", "confirm", "fact-exp", "--commit", m[:10])


def test_install_refuses_a_hooks_path_inside_the_vault(alpha: object, vault_path: Path) -> None:
    from am.errors import UsageError

    run_git(vault_path, "config", "core.hooksPath", ".githooks")
    result = CliRunner().invoke(cli, ["--vault", str(vault_path), "hooks", "install"])
    assert isinstance(result.exception, UsageError) and "core.hooksPath" in str(result.exception)
    assert not (vault_path / ".githooks").exists()
    outside = vault_path.parent / "shared-hooks"
    run_git(vault_path, "config", "core.hooksPath", str(outside))
    am("--vault", str(vault_path), "hooks", "install")
    assert MARKER in (outside / "pre-commit").read_text()


def test_hooks_installed_from_a_linked_worktree_are_the_ones_git_runs(
        alpha: object, vault_path: Path, tmp_path: Path) -> None:
    alpha.add_topic(title="Redis", kind="tool", id="tool-redis")  # type: ignore[attr-defined]
    linked = tmp_path / "linked"
    run_git(vault_path, "worktree", "add", "-q", "-b", "side", str(linked))
    hooks = Path(run_git(linked, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip())
    am("--vault", str(linked), "hooks", "install")
    assert all((hooks / name).is_file() for name in VAULT_HOOKS)  # where git looks for them, in every worktree
    assert "all good" in am("--vault", str(linked), "doctor")
    before = head(linked)
    rel = "relations/2026/11/project-alpha--likes--tool-redis.md"
    write(linked, rel, relation_text("likes", "project-alpha", "tool-redis"))
    run_git(linked, "add", rel)
    proc = git_commit(linked, "hand-written relation")
    assert proc.returncode != 0 and "'likes' is not allowed" in proc.stderr
    assert head(linked) == before
    assert run_git(linked, "status", "--porcelain", "--", "am-health.md") == ""  # the note stays ignored there


@pytest.mark.parametrize("slip", ["the opening --- deleted", "frontmatter of its own"])
def test_a_record_turned_into_a_note_is_a_removal(hooked: object, vault_path: Path, slip: str) -> None:
    # A hand edit that loses a record's frontmatter makes it a note: the record is gone, as if deleted.
    rel = "relations/2026/11/project-alpha--depends-on--tool-redis.md"
    fact = "facts/2026/11/01/fact-by-title.md"
    write(vault_path, rel, relation_text("depends-on", "project-alpha", "tool-redis"))
    write(vault_path, fact, fact_text("fact-by-title", "Alpha keeps sessions in Redis.").replace(
        "topics: [project-alpha]", 'topics: ["[[Redis]]"]'))
    write(vault_path, "facts/2026/11/01/fact-alone.md", fact_text("fact-alone", "Alpha is fast."))
    run_git(vault_path, "mv", "topics/tool-redis.md", "topics/Redis.md")  # a readable name, as Obsidian shows it
    run_git(vault_path, "add", "-A")
    assert git_commit(vault_path, "records").returncode == 0
    before = head(vault_path)
    topic = vault_path / "topics" / "Redis.md"
    text = topic.read_text()
    topic.write_text(text[4:] if slip == "the opening --- deleted" else "---\ntype: book\n---\nRedis notes.\n")
    run_git(vault_path, "add", "-A")
    proc = git_commit(vault_path, "a slip in Obsidian")
    assert proc.returncode != 0 and head(vault_path) == before
    for path, field in ((rel, "to"), (fact, "topics")):
        assert f"error: {path}: field '{field}': names 'tool-redis', which this commit removes" in proc.stderr
    # An unreferenced fact turned into a note passes, with the warning a deletion gets.
    run_git(vault_path, "checkout", "HEAD", "--", "topics/Redis.md")
    alone = vault_path / "facts/2026/11/01/fact-alone.md"
    alone.write_text(alone.read_text()[4:])
    run_git(vault_path, "add", "-A")
    proc = git_commit(vault_path, "another slip")
    assert proc.returncode == 0, proc.stderr
    assert "facts/2026/11/01/fact-alone.md was record fact-alone and is now a note" in proc.stderr
    # A note that was a note before, under an id-shaped name, is edited without a word.
    write(vault_path, "facts/my-notes.md", "Ideas.\n")
    run_git(vault_path, "add", "-A")
    assert git_commit(vault_path, "a note").returncode == 0
    write(vault_path, "facts/my-notes.md", "Ideas, more.\n")
    run_git(vault_path, "add", "-A")
    proc = git_commit(vault_path, "the note edited")
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_a_half_saved_record_is_refused_with_the_fix(hooked: object, vault_path: Path) -> None:
    # Obsidian saving half a file, or a hand-typed id: the refusal says what to do, not only what is wrong.
    write(vault_path, "facts/2026/11/01/fact-half.md", fact_text("fact-half", "Alpha is fast.")[:60])
    write(vault_path, "topics/Kafka.md", "---\ntype: topic\nid: Kafka\nkind: tool\ntitle: Kafka\n---\n")
    run_git(vault_path, "add", "-A")
    before = head(vault_path)
    proc = git_commit(vault_path, "half saved")
    assert proc.returncode != 0 and head(vault_path) == before
    half = next(ln for ln in proc.stderr.splitlines() if "fact-half.md" in ln)
    assert "frontmatter is not closed; add a line with just --- after the YAML keys" in half, half
    kafka = next(ln for ln in proc.stderr.splitlines() if "Kafka.md" in ln)
    assert "'Kafka' is not a valid id; use lowercase ASCII letters and digits joined by '-'" in kafka, kafka


def test_pre_commit_refuses_conflict_markers_left_by_a_merge(hooked: object, vault_path: Path) -> None:
    fact = "facts/2026/11/01/fact-alpha-deploys.md"
    write(vault_path, fact, fact_text("fact-alpha-deploys", "Alpha deploys on Fridays."))
    run_git(vault_path, "add", fact)
    assert git_commit(vault_path, "a fact").returncode == 0
    before = head(vault_path)
    write(vault_path, fact, fact_text("fact-alpha-deploys", "<<<<<<< HEAD\nAlpha deploys on Tuesdays.\n=======\n"
                                                            "Alpha deploys on Mondays.\n>>>>>>> other"))
    run_git(vault_path, "add", fact)
    proc = git_commit(vault_path, "merged with the markers in")
    assert proc.returncode != 0
    assert f"{fact}:10:" in proc.stderr and "[conflict-markers]" in proc.stderr and "am hooks install" in proc.stderr
    assert head(vault_path) == before


@pytest.mark.parametrize("args", [("rebase",), ["rebase"], ("amend",), ()])
def test_post_rewrite_completes_a_rebase_whatever_sequence_its_arguments_come_in(
        args: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # `am hook post-rewrite rebase` (click) passes a tuple, the light hook runner a list: both are a rebase.
    import io

    from am.upkeep import hooks, merges

    seen: list[list[tuple[str, str]]] = []
    monkeypatch.setattr(merges, "complete_rebase", lambda vault, pairs: seen.append(pairs))
    hooks._complete_merge(object(), "post-rewrite", args, b"a1 b1\nbad\n", io.StringIO())  # type: ignore[arg-type]
    assert seen == ([[("a1", "b1")]] if args and list(args)[0] == "rebase" else [])
