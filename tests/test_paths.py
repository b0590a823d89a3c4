"""`am slice --path FILE...`: facts that watch or mention the files at hand, their topics' neighbours, dead paths."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from am.cli.main import cli
from am.demo import materialise_demo
from am.vault import Vault

MAIN = ["--repo", "project-alpha", "--branch", "main"]


def test_path_slice(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    materialise_demo(root).close()
    code = tmp_path / "demo-code"
    with Vault.open(root, actor="tester") as v:
        watcher = v.add_fact("getUsers caps a call at 100 ids.", topics=["project-alpha"], repo="project-alpha",
                             branch="main", paths=["src/api/users.py", "src/api/legacy.py"]).records[0].id
        mention = v.add_fact("The TTL constant lives in cache.py.", topics=["tool-redis"]).records[0].id
        v.add_fact("Li Wei prefers small pull requests.", topics=["person-li-wei"])

    def pack(*paths: str) -> dict:  # type: ignore[type-arg]
        args = [a for p in paths for a in ("--path", p)]
        out = CliRunner().invoke(cli, ["--vault", str(root), "slice", *MAIN, *args, "--format", "json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)  # type: ignore[no-any-return]

    data = pack("src/api/users.py")
    shown = [f["id"] for t in data["topics"] for f in t["facts"]]
    # The facts watching it first (the demo's batch-lookup fact watches it too); then the facts about
    # their topic and its neighbours.
    assert set(shown[:2]) == {watcher, "f-20261002-0915-c4f1a5"}
    assert mention in shown  # tool-redis is one hop from project-alpha
    assert "dead watched paths" in data["scope"]["description"]
    assert "`src/api/legacy.py` (watched by" in data["scope"]["description"]
    # A path inside the clone, given absolute, is taken relative to it; a file name in the text counts.
    data = pack(str(code / "src" / "session" / "cache.py"))
    assert "`src/session/cache.py`" in data["scope"]["description"]
    assert {mention, "f-20260923-1210-8d2e41"} <= {f["id"] for t in data["topics"] for f in t["facts"]}
    assert ": 2 facts watch or mention them" in data["scope"]["description"]
    # Another world's clone knows nothing of these paths, but the names still find what mentions them.
    out = CliRunner().invoke(cli, ["--vault", str(root), "slice", "--path", "cache.py", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert mention in {f["id"] for t in json.loads(out.output)["topics"] for f in t["facts"]}
    assert "dead watched" not in data["scope"]["description"]


def _slice(root: Path, *args: str) -> tuple[int, str]:
    """Run am slice through main() (the real error handling); return (code, stdout and stderr)."""
    from am.cli.main import main

    runner = CliRunner()
    with runner.isolation() as streams:
        try:
            main(["--vault", str(root), "slice", *MAIN, *args])
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        return code, streams[0].getvalue().decode() + streams[1].getvalue().decode()


def test_a_path_pack_names_its_paths_in_its_id_and_its_hint(tmp_path: Path) -> None:
    # A --path pack had the id of the whole world's pack (--since it then diffed the whole world), and its
    # "Get all of them with" hint dropped --path, so the command it gave printed another pack.
    root = tmp_path / "demo"
    materialise_demo(root).close()
    code, whole = _slice(root, "--format", "json")
    assert code == 0, whole
    code, first = _slice(root, "--path", "src/api/users.py", "--format", "json")
    assert code == 0, first
    code, second = _slice(root, "--path", "src/session/cache.py", "--format", "json")
    assert code == 0, second
    ids = {json.loads(text)["pack_id"] for text in (whole, first, second)}
    assert len(ids) == 3
    # The same paths, given absolute from inside the clone, are the same question: the same id.
    clone = tmp_path / "demo-code"
    code, absolute = _slice(root, "--path", str(clone / "src" / "api" / "users.py"), "--format", "json")
    assert code == 0, absolute
    assert json.loads(absolute)["pack_id"] == json.loads(first)["pack_id"]
    code, cut = _slice(root, "--path", "src/api/users.py", "--max-tokens", "300")
    assert code == 0, cut
    assert "Get all of them with `am slice --repo project-alpha --branch main --path src/api/users.py --max-tokens" in cut


def test_path_with_another_scope_is_refused(tmp_path: Path) -> None:
    # --path chooses the scope; --topic and --query were mixed in silently (a --topic outside the paths'
    # neighbourhood said "no topic ... in the vault"), and --since ignored --path and listed the whole world.
    root = tmp_path / "demo"
    materialise_demo(root).close()
    for extra, named in ((["--topic", "tool-redis"], "--topic"), (["--query", "redis"], "--query"),
                         (["--since", "HEAD~1"], "--since")):
        code, out = _slice(root, "--path", "src/api/users.py", *extra)
        assert code == 2, out
        assert f"--path and {named}" in out and "give one of them" in out, out


def test_path_pack_counts_what_holds_in_the_world(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    materialise_demo(root).close()
    code, whole = _slice(root, "--format", "json")
    assert code == 0, whole
    # No fact watches or mentions the file: the header said "Holds here: 0 facts, 0 topics" while 5 hold
    # (and dropped the Rule line's fact judged by branch name), as if the world were empty.
    code, none = _slice(root, "--path", "src/nothing.py", "--format", "json")
    assert code == 0, none
    assert json.loads(none)["holds"] == json.loads(whole)["holds"]
    assert json.loads(none)["topics"] == []
    code, text = _slice(root, "--path", "src/nothing.py")
    assert "1 fact judged by branch name" in text and "Holds here: 5 facts" in text, text


def test_path_pack_reads_the_vault_as_of(tmp_path: Path) -> None:
    # --as-of read the work tree and labelled it "as of": the batch-lookup fact (2026-10-02) that watches
    # users.py was in a pack of the vault as of 2026-10-01, and the Vault line named today's commit.
    root = tmp_path / "demo"
    materialise_demo(root).close()
    then = __import__("subprocess").run(
        ["git", "-C", str(root), "log", "-1", "--format=%H", "--before=2026-10-01T00:00:00+08:00"],
        capture_output=True, text=True, check=True).stdout.strip()
    code, now = _slice(root, "--path", "src/api/users.py", "--format", "json")
    assert code == 0, now
    assert "f-20261002-0915-c4f1a5" in {f["id"] for t in json.loads(now)["topics"] for f in t["facts"]}
    code, past = _slice(root, "--path", "src/api/users.py", "--as-of", "2026-10-01T00:00:00+08:00", "--format", "json")
    assert code == 0, past
    data = json.loads(past)
    assert data["vault"]["commit"] == then
    shown = {f["id"] for t in data["topics"] for f in t["facts"]}
    assert shown == set() and ": 0 facts watch or mention them" in data["scope"]["description"]
    assert data["holds"]["facts"] == 4  # the world as the vault then knew it
    code, text = _slice(root, "--path", "src/api/users.py", "--as-of", "2000-01-01")
    assert code == 2 and "no commit at or before 2000-01-01" in text, text


def test_one_is_singular_in_the_header(tmp_path: Path) -> None:
    # A new project's first slice said "(1 commits in this history)", and a path one fact watches said
    # "1 fact watch or mention them".
    import subprocess

    code_repo = tmp_path / "app"
    code_repo.mkdir()
    git = ["git", "-C", str(code_repo), "-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(code_repo)], check=True)
    (code_repo / "app.py").write_text("print(1)\n")
    subprocess.run([*git, "add", "app.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    root = tmp_path / "vault"
    with Vault.init(root, name="app-memory", actor="tester") as v:
        v.add_topic(id="project-app", title="App", kind="project")
        v.add_fact("app.py prints one.", topics=["project-app"])
    from am.registry import Registry

    Registry.load().add_repo("app", code_repo, vault="app-memory")
    out = CliRunner().invoke(cli, ["--vault", str(root), "slice", "--repo", "app", "--branch", "main",
                                   "--path", "app.py"])
    assert out.exit_code == 0, out.output
    assert "(1 commit in this history)" in out.output
    assert ": 1 fact watches or mentions them" in out.output
