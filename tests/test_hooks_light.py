"""The vault hooks' short way: the git CLI instead of pygit2, no click, and post-commit printing what pre-commit found.

Real repositories, real `git commit` processes through the installed shims;
Git's own plumbing (and pygit2's diff, the former reader) is the oracle for
what the index changes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import GIT_IDENTITY, REPO_ROOT, run_git

from am.cli.main import cli
from am.git.program.cligit import CliStore
from am.upkeep.postcommit import NOTE_FILE

FACT = ("---\ntype: fact\nid: {fid}\ntopics: [project-alpha]\nstatus: active\nconfidence: high\n"
        "provenance: human\ncreated: 2026-11-01T10:00:00+00:00\n---\n{body}\n")


def am(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def commit(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), "commit", "-q", *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_IDENTITY}, check=False)


def write_fact(root: Path, fid: str, body: str) -> str:
    rel = f"facts/2026/11/01/{fid}.md"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(FACT.format(fid=fid, body=body), encoding="utf-8")
    return rel


@pytest.fixture
def hooked(alpha: object, vault_path: Path) -> Path:
    am("--vault", str(vault_path), "hooks", "install")
    assert run_git(vault_path, "status", "--porcelain").strip() == ""
    return vault_path


_PROBE = """
import io, json, sys
from am.cli.hookrun import main
err, sys.stderr = sys.stderr, io.StringIO()
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
said, sys.stderr = sys.stderr.getvalue(), err
print(json.dumps({'code': code, 'err': said, 'modules': sorted(sys.modules)}))
"""
HEAVY = ("pygit2", "click", "yaml", "jsonschema", "markdown_it", "sqlite3", "am.vault", "am.cache", "am.packs")


def probe(root: Path, *args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, **GIT_IDENTITY, "PYTHONPATH": str(REPO_ROOT)}, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_pre_and_post_commit_import_neither_pygit2_nor_click_nor_the_facade(hooked: Path) -> None:
    rel = write_fact(hooked, "fact-light", "Alpha links [[nowhere-at-all]].")
    run_git(hooked, "add", "-A")
    pre = probe(hooked, "pre-commit")
    assert pre["code"] == 0, pre["err"]
    loaded = set(pre["modules"])  # type: ignore[arg-type]
    assert not [m for m in HEAVY if m in loaded or any(x.startswith(m + ".") for x in loaded)]
    # What pre-commit found is kept for post-commit, with the blob it checked.
    note = json.loads((hooked / ".git" / "am" / NOTE_FILE).read_text())
    blob = run_git(hooked, "rev-parse", f":{rel}").strip()
    assert note["changes"] == [[rel, blob]] and "dangling-link" in note["lines"][0]
    run_git(hooked, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "by hand")
    post = probe(hooked, "post-commit")
    assert post["code"] == 0 and "nowhere-at-all" in str(post["err"]) and "dangling-link" in str(post["err"])
    loaded = set(post["modules"])  # type: ignore[arg-type]
    assert not [m for m in HEAVY if m in loaded or any(x.startswith(m + ".") for x in loaded)]
    assert not (hooked / ".git" / "am" / NOTE_FILE).exists()  # used once
    assert "nowhere-at-all" in (hooked / "am-health.md").read_text()


def test_post_commit_lints_the_long_way_when_the_commit_is_not_what_pre_commit_checked(hooked: Path) -> None:
    # pre-commit checks one change; then a different one is committed without it (--no-verify).
    write_fact(hooked, "fact-first", "Checked [[ghost-one]].")
    run_git(hooked, "add", "-A")
    assert probe(hooked, "pre-commit")["code"] == 0
    write_fact(hooked, "fact-second", "Committed [[ghost-two]].")
    run_git(hooked, "add", "-A")
    done = commit(hooked, "--no-verify", "-m", "both")
    assert done.returncode == 0, done.stderr
    # post-commit lints what the commit holds (both files), not what pre-commit remembered.
    assert "ghost-one" in done.stderr and "ghost-two" in done.stderr


def test_a_chained_pre_commit_that_stages_more_gets_the_long_lint(hooked: Path) -> None:
    chained = hooked / ".git" / "am" / "hooks-chained"
    chained.mkdir(parents=True, exist_ok=True)
    extra = write_fact(hooked, "fact-extra", "Added by another hook [[ghost-extra]].")
    (chained / "pre-commit").write_text(f"#!/bin/sh\ngit add {extra}\n")
    (chained / "pre-commit").chmod(0o755)
    write_fact(hooked, "fact-mine", "Mine [[ghost-mine]].")
    run_git(hooked, "add", "facts/2026/11/01/fact-mine.md")
    done = commit(hooked, "-m", "two hooks")
    assert done.returncode == 0, done.stderr
    assert "ghost-extra" in done.stderr and "ghost-mine" in done.stderr
    assert "fact-extra.md" in run_git(hooked, "show", "--name-only", "--format=", "HEAD")


def test_commit_a_checks_the_index_git_hands_the_hook(hooked: Path) -> None:
    rel = write_fact(hooked, "fact-tracked", "Fine.")
    run_git(hooked, "add", "-A")
    assert commit(hooked, "-m", "fine").returncode == 0
    (hooked / rel).write_text(FACT.format(fid="fact-tracked", body="x").replace("confidence: high",
                                                                                 "confidence: very"))
    before = run_git(hooked, "rev-parse", "HEAD")
    done = commit(hooked, "-a", "-m", "commit -a")  # the index is a temporary one (GIT_INDEX_FILE)
    assert done.returncode != 0 and rel in done.stderr and "confidence" in done.stderr
    assert run_git(hooked, "rev-parse", "HEAD") == before


def test_cli_store_agrees_with_libgit2_on_what_the_index_changes(hooked: Path) -> None:
    from am.git import GitStore
    from am.git.edits import staged_changes

    kept = write_fact(hooked, "fact-kept", "Kept.")
    gone = write_fact(hooked, "fact-gone", "Gone.")
    run_git(hooked, "add", "-A")
    run_git(hooked, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "two")
    (hooked / kept).write_text(FACT.format(fid="fact-kept", body="Changed."))
    run_git(hooked, "mv", gone, "facts/2026/11/01/fact-moved.md")
    write_fact(hooked, "事实-中文", "名字 [[project-alpha]].")
    (hooked / "notes").mkdir()
    (hooked / "notes" / "Untitled.md").write_text("")
    run_git(hooked, "add", "-A")
    with CliStore.open(hooked) as light:
        ours = sorted(light.staged_changes(None))
        assert light.staged_entries() == GitStore.open(hooked).staged_entries()
        blob = {p: new for p, _, new in ours}[kept]
        assert light.read_object(blob) == (hooked / kept).read_bytes()
        assert light.parents(light.head() or "") == [run_git(hooked, "rev-parse", "HEAD~1").strip()]
    assert ours == sorted(staged_changes(GitStore.open(hooked), None))
    assert any(p == "facts/2026/11/01/事实-中文.md" for p, _, _ in ours)


def test_cli_store_on_an_unborn_branch(tmp_path: Path) -> None:
    run_git(tmp_path, "init", "-q", "-b", "main", "repo")
    root = tmp_path / "repo"
    (root / "facts").mkdir()
    (root / "facts" / "a.md").write_text("x\n")
    run_git(root, "add", "-A")
    with CliStore.open(root) as light:
        assert light.head() is None
        [(path, old, new)] = light.staged_changes(None)
        assert path == "facts/a.md" and old is None and light.read_object(new or "") == b"x\n"


def test_old_shims_still_work(hooked: Path) -> None:
    # A shim written by an earlier am runs `am.cli.main hook NAME`: the same checks.
    shim = hooked / ".git" / "hooks" / "pre-commit"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={REPO_ROOT} exec {sys.executable} -m am.cli.main hook pre-commit \"$@\"\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    (hooked / "facts").mkdir(exist_ok=True)
    (hooked / "facts" / "bad.md").write_text("---\ntype: fact\nid: bad\ntopics: [project-alpha]\n"
                                             "status: active\nconfidence: very\nprovenance: human\ncreated: 2026-11-02\n---\nx\n")
    run_git(hooked, "add", "-A")
    done = commit(hooked, "-m", "old shim")
    assert done.returncode != 0 and "bad.md" in done.stderr and "confidence" in done.stderr


def test_links_by_title_give_no_warning_after_the_commit(hooked: Path) -> None:
    # project-alpha is named after its id; its title reaches it too, as post-commit's cache lookup did.
    rel = write_fact(hooked, "fact-by-title", "Alpha by title: [[Alpha service]].")
    (hooked / rel).write_text((hooked / rel).read_text().replace("topics: [project-alpha]",
                                                                 'topics: ["[[Alpha service]]"]'))
    run_git(hooked, "add", "-A")
    done = commit(hooked, "-m", "by title")
    assert done.returncode == 0, done.stderr
    assert "unknown-topic" not in done.stderr and "dangling-link" not in done.stderr, done.stderr


def test_doctor_names_older_shims_and_fix_rewrites_them(hooked: Path) -> None:
    shim = hooked / ".git" / "hooks" / "post-commit"
    shim.write_text(shim.read_text().replace("# am-shim: 3", "# am-shim: 2"))
    result = CliRunner().invoke(cli, ["--vault", str(hooked), "doctor", "--format", "json"])
    found = [(Path(f["path"]).name, f["kind"]) for f in json.loads(result.stdout)["findings"]]
    assert ("post-commit", "hook-old") in found and result.exit_code == 1
    CliRunner().invoke(cli, ["--vault", str(hooked), "doctor", "--fix"])
    assert "# am-shim: 3" in shim.read_text()
    assert "hook-" not in CliRunner().invoke(cli, ["--vault", str(hooked), "doctor"]).stdout


def test_doctor_names_shims_from_before_shim_versions(hooked: Path) -> None:
    # The shim am wrote before `# am-shim:` lines (2026-11-30): a pinned interpreter starting the whole CLI.
    from am.upkeep.hookfiles import MARKER

    shim = hooked / ".git" / "hooks" / "post-commit"
    code = f"import sys; sys.path.insert(0, {str(REPO_ROOT)!r}); from am.cli.main import main; main()"
    shim.write_text(f"#!/bin/sh\n{MARKER}\nexec {sys.executable} -I -c \"{code}\" hook post-commit \"$@\"\n")
    portable = hooked / ".git" / "hooks" / "pre-commit"
    portable.write_text((REPO_ROOT / "hooks" / "pre-commit").read_text())  # the copy to install by hand: not old
    result = CliRunner().invoke(cli, ["--vault", str(hooked), "doctor", "--format", "json"])
    found = [(Path(f["path"]).name, f["kind"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [("post-commit", "hook-old")] and result.exit_code == 1
    CliRunner().invoke(cli, ["--vault", str(hooked), "doctor", "--fix"])
    assert "# am-shim: 3" in shim.read_text()


def test_pre_commit_reads_each_of_heads_files_once_at_most(hooked: Path) -> None:
    """A commit that edits, deletes and turns records into notes reads HEAD's version of each file once, or never."""
    import io

    from am.upkeep.precommit import pre_commit

    edited = write_fact(hooked, "fact-edited", "Before.")
    gone = write_fact(hooked, "fact-gone", "Gone.")
    noted = write_fact(hooked, "fact-noted", "A record for now.")
    run_git(hooked, "add", "-A")
    run_git(hooked, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "three facts")
    (hooked / edited).write_text(FACT.format(fid="fact-edited", body="After."), encoding="utf-8")
    (hooked / noted).write_text("Just a note now.\n", encoding="utf-8")
    run_git(hooked, "rm", "-q", gone, "topics/project-alpha.md")
    run_git(hooked, "add", "-A")
    head = {p: run_git(hooked, "rev-parse", f"HEAD:{p}").strip()
            for p in (edited, gone, noted, "topics/project-alpha.md")}
    reads: list[str] = []

    class Counting(CliStore):
        def read_object(self, oid: str) -> bytes:
            reads.append(oid)
            return super().read_object(oid)

    out = io.StringIO()
    with Counting.open(hooked) as store:
        code = pre_commit(store, index_file=None, allow_secrets=False, out=out)
    assert code == 1 and "names 'project-alpha', which this commit removes" in out.getvalue()
    assert "fact-gone.md is deleted" in out.getvalue() and "was record fact-noted and is now a note" in out.getvalue()
    assert reads.count(head[edited]) == 0  # an id-shaped fact's id is its name: HEAD's copy is not needed
    assert all(reads.count(head[p]) == 1 for p in (gone, noted, "topics/project-alpha.md")), reads


SESSION = ("---\ntype: topic\nid: {tid}\nkind: session\ntitle: Session {tid}\nfile: {file}\n"
           "created: 2026-09-23T12:00:00+08:00\n---\nA session.\n")


@pytest.mark.parametrize("where", ["absolute", "climbs", "link", "not-text"])
def test_pre_commit_refuses_a_session_topic_whose_file_is_outside_sessions(hooked: Path, tmp_path: Path,
                                                                           where: str) -> None:
    """am check reports it (session-file) and every reader refuses it: a commit of it is refused the same way."""
    outside = tmp_path / "private.jsonl"
    outside.write_text('{"ts": "2026-09-23T12:00:00Z", "role": "user", "text": "hi"}\n', encoding="utf-8")
    (hooked / "sessions" / "claude-code").mkdir(parents=True)
    value = {"absolute": str(outside), "climbs": "sessions/../../private.jsonl",
             "link": "sessions/claude-code/s1.jsonl", "not-text": "[sessions/claude-code/s1.jsonl]"}[where]
    if where == "link":
        (hooked / value).symlink_to(outside)
    (hooked / "topics" / "session-s1.md").write_text(SESSION.format(tid="session-s1", file=value), encoding="utf-8")
    run_git(hooked, "add", "topics/session-s1.md")
    before = run_git(hooked, "rev-parse", "HEAD")
    done = commit(hooked, "-m", "a session topic")
    # Before: committed, silently; am would then have read that file of the machine as a session log.
    assert done.returncode != 0, done.stdout + done.stderr
    assert "topics/session-s1.md" in done.stderr and "field 'file'" in done.stderr, done.stderr
    assert "[session-file]" in done.stderr and "sessions/" in done.stderr
    assert run_git(hooked, "rev-parse", "HEAD") == before
    pre = probe(hooked, "pre-commit")  # still light: the refusal imports nothing heavy
    assert pre["code"] == 1 and "[session-file]" in str(pre["err"])
    loaded = set(pre["modules"])  # type: ignore[arg-type]
    assert not [m for m in HEAVY if m in loaded or any(x.startswith(m + ".") for x in loaded)]


def test_pre_commit_takes_a_session_topic_whose_file_is_in_sessions(hooked: Path) -> None:
    rel = "sessions/claude-code/s2.jsonl"
    (hooked / rel).parent.mkdir(parents=True)
    (hooked / rel).write_text('{"ts": "2026-09-23T12:00:00Z", "role": "user", "text": "hi"}\n', encoding="utf-8")
    (hooked / "topics" / "session-s2.md").write_text(SESSION.format(tid="session-s2", file=rel), encoding="utf-8")
    run_git(hooked, "add", "-A")
    done = commit(hooked, "-m", "a session topic")
    assert done.returncode == 0, done.stderr
    assert "session-file" not in done.stderr
