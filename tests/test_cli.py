"""The command line: thin, one clear error line for every expected mistake, stable JSON, nothing changed on error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from am.cli.main import cli, main

from conftest import PYTHON, REPO_ROOT, run_git, subprocess_env


def am(*args: str, input: str | None = None) -> tuple[int, str, str]:
    """Run `am ARGS` in-process through main() (the real error handling); return (code, stdout, stderr)."""
    runner = CliRunner()
    with runner.isolation(input=input) as streams:
        try:
            main(list(args))
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        out, err = streams[0].getvalue().decode(), streams[1].getvalue().decode()
    return code, out, err


@pytest.fixture
def cli_vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    code, out, err = am("--actor", "tester", "init", str(root), "--name", "clivault")
    assert code == 0, err
    code, _, err = am("--vault", str(root), "--actor", "tester", "topic", "add", "project-alpha",
                      "--title", "Alpha service", "--alias", "Alpha", "--alias", "Alpha 服务")
    assert code == 0, err
    return root


def _head(root: Path) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def _one_error(code: int, out: str, err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: "), err
    assert "Traceback" not in err + out
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_init_add_show_list(cli_vault: Path) -> None:
    v = str(cli_vault)
    code, out, err = am("--vault", v, "--actor", "claude-code", "fact", "add",
                        "Alpha on main only offers getUser(id).", "--topic", "project-alpha", "--repo", "project-alpha",
                        "--branch", "main", "--commit", "1a2b3c4", "--unverified", "--confidence", "high", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) == {"commit", "created", "records"} and data["created"] is True
    fact = data["records"][0]
    assert data["commit"] == _head(cli_vault)
    assert {"type", "id", "topics", "status", "confidence", "provenance", "repo", "version", "commit", "axis",
            "created", "body", "path"} <= set(fact)
    assert fact["topics"] == ["project-alpha"] and fact["version"] == "main" and fact["axis"] == "subject"
    assert run_git(cli_vault, "log", "-1", "--format=%an").strip() == "claude-code"

    code, out, _ = am("--vault", v, "fact", "show", fact["id"], "--format", "json")
    shown = json.loads(out)  # the record's own fields, and where it holds (am fact show, issue 37.5)
    assert code == 0 and {k: v for k, v in shown.items() if k not in ("valid_now", "holds_in")} == fact
    assert shown["valid_now"] is True and [w["world"] for w in shown["holds_in"]] == [
        {"repo": "project-alpha", "branch": "main"}]
    code, out, _ = am("--vault", v, "fact", "show", fact["id"])
    assert fact["id"] in out and "getUser" in out
    code, out, _ = am("--vault", v, "fact", "list", "--format", "json")
    assert [f["id"] for f in json.loads(out)] == [fact["id"]]
    code, out, _ = am("--vault", v, "topic", "list", "--format", "json")
    topics = json.loads(out)
    assert [t["id"] for t in topics] == ["project-alpha"] and topics[0]["aliases"] == ["Alpha", "Alpha 服务"]
    code, out, _ = am("--vault", v, "topic", "show", "project-alpha", "--format", "json")
    assert json.loads(out)["path"] == "topics/project-alpha.md"
    code, out, _ = am("vault", "list", "--format", "json")
    assert {"name": "clivault", "path": str(cli_vault.resolve())} in json.loads(out)


def test_supersede_expire_status_and_relations(cli_vault: Path) -> None:
    v = str(cli_vault)
    _, out, _ = am("--vault", v, "fact", "add", "old", "--topic", "project-alpha", "--format", "json")
    old = json.loads(out)["records"][0]["id"]
    code, out, err = am("--vault", v, "fact", "supersede", old, "new", "--reason", "changed", "--format", "json")
    assert code == 0, err
    records = json.loads(out)["records"]
    assert records[0]["supersedes"] == [old] and records[1]["status"] == "superseded"
    assert len(run_git(cli_vault, "show", "--name-only", "--format=", "HEAD").split()) == 2
    new = records[0]["id"]
    assert am("--vault", v, "fact", "status", new, "contested")[0] == 0
    assert am("--vault", v, "fact", "expire", new, "--reason", "gone")[0] == 0
    _, out, _ = am("--vault", v, "fact", "list", "--status", "expired", "--format", "json")
    assert [f["id"] for f in json.loads(out)] == [new]
    assert am("--vault", v, "topic", "add", "--title", "Redis", "--kind", "tool")[0] == 0
    code, out, err = am("--vault", v, "relation", "add", "project-alpha", "depends-on", "tool-redis",
                        "--note", "sessions", "--format", "json")
    assert code == 0, err
    rid = json.loads(out)["records"][0]["id"]
    assert rid == "project-alpha--depends-on--tool-redis"
    _, out, _ = am("--vault", v, "relation", "list", "--format", "json")
    assert [r["id"] for r in json.loads(out)] == [rid] and json.loads(out)[0]["from"] == "project-alpha"
    assert am("--vault", v, "relation", "expire", rid)[0] == 0
    _, out, _ = am("--vault", v, "relation", "list", "--format", "json")
    assert json.loads(out) == []
    _, out, _ = am("--vault", v, "relation", "list", "--all", "--format", "json")
    assert json.loads(out)[0]["status"] == "expired"


def test_fact_text_from_stdin(cli_vault: Path) -> None:
    code, out, err = am("--vault", str(cli_vault), "fact", "add", "-", "--topic", "project-alpha", "--format", "json",
                        input="来自标准输入的事实。\n")
    assert code == 0, err
    assert json.loads(out)["records"][0]["body"] == "来自标准输入的事实。\n"


def test_vault_from_environment_and_enclosing_folder(cli_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AM_VAULT", "clivault")
    assert am("topic", "show", "project-alpha")[0] == 0
    monkeypatch.delenv("AM_VAULT")
    monkeypatch.chdir(cli_vault / "topics")
    code, out, _ = am("topic", "list")
    assert code == 0 and "project-alpha" in out


@pytest.mark.parametrize("case", ["relation-type", "unknown-topic", "collision", "invalid-file", "dirty", "bad-id",
                                  "unknown-fact", "bad-actor", "empty-text"])
def test_expected_mistakes_print_one_line_and_change_nothing(cli_vault: Path, case: str) -> None:
    v = str(cli_vault)
    _, out, _ = am("--vault", v, "fact", "add", "a fact", "--topic", "project-alpha", "--format", "json")
    fact = json.loads(out)["records"][0]
    if case == "invalid-file":
        path = cli_vault / "topics" / "project-alpha.md"
        path.write_text(path.read_text().replace("kind: project\n", "kind: project\nkind: tool\n"))
        # The hooks am init installed refuse this commit; a client that runs none (isomorphic-git) takes it.
        run_git(cli_vault, "commit", "-q", "--no-verify", "-am", "hand edit")
    if case == "dirty":
        (cli_vault / fact["path"]).write_text((cli_vault / fact["path"]).read_text() + "edit\n")
    head = _head(cli_vault)
    status = run_git(cli_vault, "status", "--porcelain")
    args, needles = {
        "relation-type": (["relation", "add", "project-alpha", "related-to", "project-alpha"],
                          ["'related-to' is not allowed", "depends-on, part-of"]),
        "unknown-topic": (["fact", "add", "x", "--topic", "project-nope"], ["project-nope", "--create-topic"]),
        "collision": (["topic", "add", "project-alpha", "--title", "Again"], ["project-alpha", "another id"]),
        "invalid-file": (["fact", "add", "x", "--topic", "project-alpha"],
                         ["topics/project-alpha.md:", "duplicate key 'kind'"]),
        "dirty": (["fact", "status", fact["id"], "contested"], [fact["path"], "uncommitted", "commit or discard"]),
        "bad-id": (["topic", "add", "../etc", "--title", "x"], ["not a valid id", "lowercase"]),
        "unknown-fact": (["fact", "show", "f-20990101-0000-000000"], ["no record", "am fact list"]),
        "bad-actor": (["--actor", "evil\nAm-Op: x", "fact", "add", "x", "--topic", "project-alpha"], ["actor"]),
        "empty-text": (["fact", "add", "  ", "--topic", "project-alpha"], ["empty"]),
    }[case]
    code, out, err = am("--vault", v, *args)
    _one_error(code, out, err, *needles)
    assert _head(cli_vault) == head
    assert run_git(cli_vault, "status", "--porcelain") == status


def test_not_a_vault(tmp_path: Path) -> None:
    code, out, err = am("--vault", str(tmp_path), "topic", "list")
    line = _one_error(code, out, err, str(tmp_path), "am init")
    assert code == 3 and "not an am vault" in line


def test_a_registered_vault_whose_folder_moved_is_named_with_the_fix_not_am_init(cli_vault: Path) -> None:
    moved = cli_vault.with_name("v-moved")
    cli_vault.rename(moved)
    code, out, err = am("--vault", "clivault", "topic", "list")
    line = _one_error(code, out, err, "clivault", str(cli_vault), "am vault add clivault NEW-PATH --replace")
    assert code == 3 and "am init" not in line and not cli_vault.exists()  # nothing made at the old place
    assert am("vault", "add", "clivault", str(moved), "--replace")[0] == 0
    assert am("--vault", "clivault", "topic", "list")[0] == 0


def test_exit_codes_are_stable(cli_vault: Path) -> None:
    v = str(cli_vault)
    assert am("--vault", v, "fact", "add", "x", "--topic", "project-nope")[0] == 4
    assert am("--vault", v, "topic", "add", "project-alpha", "--title", "x")[0] == 6
    assert am("--vault", v, "relation", "add", "project-alpha", "related-to", "project-alpha")[0] == 5


def test_every_command_has_help_with_an_example() -> None:
    runner = CliRunner()
    names = []
    for name, command in cli.commands.items():
        subs = command.commands.items() if isinstance(command, click.Group) else [("", command)]
        for sub, _ in subs:
            args = [name, sub, "--help"] if sub else [name, "--help"]
            result = runner.invoke(cli, args)
            assert result.exit_code == 0, args
            assert "Example:" in result.output, args
            names.append(" ".join(args[:-1]))
    assert {"init", "demo", "vault list", "topic add", "fact add", "fact supersede", "relation add"} <= set(names)


# ---------------------------------------------------------------- the real process

def _run(*args: str, cwd: Path | None = None, am_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "am.cli.main", *args], capture_output=True, text=True, cwd=cwd,
                          env=subprocess_env(AM_HOME=str(am_home)))


def test_end_to_end_in_a_subprocess(tmp_path: Path, am_home: Path) -> None:
    root = tmp_path / "e2e"
    assert _run("init", str(root), am_home=am_home).returncode == 0
    proc = _run("--vault", str(root), "--actor", "claude-code", "fact", "add", "Redis caches sessions.",
                "--topic", "tool-redis", "--create-topic", "--format", "json", am_home=am_home)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [r["type"] for r in data["records"]] == ["fact", "topic"]
    assert run_git(root, "log", "-1", "--format=%an %(trailers:key=Am-Actor,valueonly)").split() == [
        "claude-code", "claude-code"]
    proc = _run("fact", "list", cwd=root, am_home=am_home)
    assert proc.returncode == 0 and "Redis caches sessions." in proc.stdout
    head = run_git(root, "rev-parse", "HEAD")
    proc = _run("--vault", str(root), "relation", "add", "tool-redis", "somewhat-related-to", "tool-redis",
                am_home=am_home)
    assert proc.returncode == 5 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr
    assert run_git(root, "rev-parse", "HEAD") == head
    proc = _run("--vault", str(tmp_path), "fact", "list", am_home=am_home)
    assert proc.returncode == 3 and proc.stderr.startswith("Error: ") and proc.stderr.count("\n") == 1


def test_init_installs_the_hooks_and_merge_driver_unless_told_not_to(tmp_path: Path, am_home: Path) -> None:
    # The README's path never ran am hooks install in the vault: hand commits went unchecked and the
    # first git pull of a fact edited on two machines left conflict markers in its frontmatter.
    root, bare = tmp_path / "hooked", tmp_path / "bare"
    proc = _run("init", str(root), am_home=am_home)
    assert proc.returncode == 0 and "hooks installed" in proc.stdout, proc.stderr
    hooks = {p.name for p in (root / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")}
    assert hooks == {"pre-commit", "post-commit", "post-merge", "post-checkout", "post-rewrite"}
    assert run_git(root, "config", "merge.am.driver").strip().endswith("merge-driver %O %A %B %P")
    assert "merge=am" in run_git(root, "show", "HEAD:.gitattributes")
    assert run_git(root, "status", "--porcelain").strip() == ""
    doctor = _run("--vault", str(root), "doctor", am_home=am_home)
    assert doctor.returncode == 0 and "hook-missing" not in doctor.stdout, doctor.stdout
    # A hand commit of a broken record is refused by the real git CLI's pre-commit.
    assert _run("--vault", str(root), "topic", "add", "tool-redis", "--title", "Redis", am_home=am_home).returncode == 0
    topic = root / "topics" / "tool-redis.md"
    topic.write_text(topic.read_text().replace("kind: tool\n", "kind: tool\nkind: project\n"))
    head = run_git(root, "rev-parse", "HEAD")
    refused = subprocess.run(["git", "-C", str(root), "commit", "-q", "-am", "hand edit"], capture_output=True,
                             text=True, env=subprocess_env(AM_HOME=str(am_home)))
    assert refused.returncode != 0 and "duplicate key 'kind'" in refused.stderr
    assert run_git(root, "rev-parse", "HEAD") == head

    proc = _run("init", str(bare), "--no-hooks", am_home=am_home)
    assert proc.returncode == 0 and "hooks installed" not in proc.stdout
    assert not [p for p in (bare / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")]
    assert run_git(bare, "ls-files").split() == [".gitignore"] or ".gitattributes" not in run_git(bare, "ls-files")


def test_standard_input_that_is_not_utf8_is_one_error_line(tmp_path: Path, am_home: Path) -> None:
    # TEXT - read the bytes as surrogates, and rendering the record raised a UnicodeEncodeError traceback.
    root = tmp_path / "v"
    assert _run("init", str(root), am_home=am_home).returncode == 0
    assert _run("--vault", str(root), "topic", "add", "tool-redis", "--title", "Redis", am_home=am_home).returncode == 0
    head = run_git(root, "rev-parse", "HEAD")
    for args in (["fact", "add", "-", "--topic", "tool-redis"],
                 ["topic", "add", "tool-x", "--title", "X", "--body", "-"],
                 ["relation", "add", "tool-redis", "references", "tool-redis", "--note", "-"]):
        proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), *args], input=b"caf\xe9 au lait\n",
                              capture_output=True, env=subprocess_env(AM_HOME=str(am_home), LC_ALL="C.UTF-8"))
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "Traceback" not in err and err.count("\n") == 1, err
        assert err.startswith("Error: standard input is not valid UTF-8 text") and "save it as UTF-8" in err, err
    assert run_git(root, "rev-parse", "HEAD") == head and run_git(root, "status", "--porcelain") == ""


def test_demo_from_the_command_line(tmp_path: Path, am_home: Path) -> None:
    proc = _run("demo", str(tmp_path / "demo"), am_home=am_home)
    assert proc.returncode == 0, proc.stderr
    assert "demo vault ready" in proc.stdout and "am fact list" in proc.stdout
    # The count it prints is git's, the hooks' own commit included.
    commits = run_git(tmp_path / "demo", "rev-list", "--count", "HEAD").strip()
    assert f"({commits} commits)" in proc.stdout and "hooks installed" in proc.stdout, proc.stdout
    proc = _run("--vault", "demo", "topic", "list", "--format", "json", am_home=am_home)
    assert proc.returncode == 0 and "project-alpha" in proc.stdout
    assert REPO_ROOT.is_dir()


def test_control_characters_in_text_are_refused_and_reported(cli_vault: Path) -> None:
    v = str(cli_vault)
    before = _head(cli_vault)
    code, out, err = am("--vault", v, "fact", "add", "red \x1b[31malert\x07", "--topic", "project-alpha")
    _one_error(code, out, err, "field 'body'", "U+001B", "remove it")
    code, out, err = am("--vault", v, "topic", "add", "tool-x", "--title", "X\x00", "--kind", "tool")
    _one_error(code, out, err, "field 'title'", "U+0000")
    assert _head(cli_vault) == before
    # A hand-edited file with one is reported by `am check`.
    path = cli_vault / "topics" / "project-alpha.md"
    path.write_text(path.read_text(encoding="utf-8") + "bell \x07\n", encoding="utf-8")
    code, out, _ = am("--vault", v, "check", "--format", "json")
    assert code != 0 and "U+0007" in out and "topics/project-alpha.md" in out


def test_valid_until_before_valid_from_is_refused(cli_vault: Path) -> None:
    before = _head(cli_vault)
    code, out, err = am("--vault", str(cli_vault), "fact", "add", "Alpha ran on Java 11.", "--topic", "project-alpha",
                        "--valid-from", "2026-09-23", "--valid-until", "2026-09-01")
    _one_error(code, out, err, "field 'valid_until'", "valid_from 2026-09-23")
    assert _head(cli_vault) == before


def test_topic_list_refuses_an_unknown_kind(cli_vault: Path) -> None:
    from am.records.model import TOPIC_KINDS

    code, out, err = am("--vault", str(cli_vault), "topic", "list", "--kind", "bogus")
    assert code == 2 and out == "" and "no topics yet" not in err
    assert "'bogus' is not one of" in err and all(k in err for k in TOPIC_KINDS)
    code, out, _ = am("--vault", str(cli_vault), "topic", "list", "--kind", "project")
    assert code == 0 and "project-alpha" in out


def test_a_mistyped_id_gets_the_nearest_id(cli_vault: Path) -> None:
    v = str(cli_vault)
    code, _, err = am("--vault", v, "--actor", "tester", "fact", "add", "Alpha caches profiles.", "--topic",
                      "project-alpha", "--id", "fact-alpha-cache")
    assert code == 0, err
    for command in (("fact", "show", "fact-alpha-cahce"), ("topic", "show", "project-alpah"),
                    ("fact", "expire", "fact-alpha-cach", "--reason", "x")):
        code, _, err = am("--vault", v, *command)
        wanted = "fact-alpha-cache" if command[0] == "fact" else "project-alpha"
        assert code == 4 and f"did you mean '{wanted}'?" in err, err
    code, _, err = am("--vault", v, "fact", "show", "zzz-nothing-like-it")
    assert code == 4 and "did you mean" not in err and "am fact list" in err


def test_fact_add_of_a_fact_already_recorded_prints_its_id_exits_0_and_commits_nothing(cli_vault: Path) -> None:
    v = str(cli_vault)
    code, out, err = am("--vault", v, "fact", "add", "Alpha caches sessions.", "--topic", "project-alpha",
                        "--format", "json")
    assert code == 0, err
    first = json.loads(out)
    assert first["created"] is True and first["commit"] == _head(cli_vault)
    fid, path = first["records"][0]["id"], first["records"][0]["path"]
    code, out, err = am("--vault", v, "fact", "add", "Alpha caches\n sessions.", "--topic", "project-alpha")
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"already recorded as fact {fid} ({path}); nothing written",
                                f"  nothing to do; to change it: am fact supersede {fid} TEXT --reason ..."]
    code, out, err = am("--vault", v, "fact", "add", "Alpha caches sessions.", "--topic", "project-alpha",
                        "--format", "json")
    again = json.loads(out)
    assert code == 0 and (again["created"], again["commit"], again["id"]) == (False, None, fid)
    assert again["records"][0]["path"] == path
    assert run_git(cli_vault, "rev-parse", "HEAD").strip() == first["commit"]
    assert run_git(cli_vault, "status", "--porcelain") == ""


def test_processes_adding_one_fact_at_once_write_it_once(cli_vault: Path) -> None:
    before = _head(cli_vault)
    procs = [subprocess.Popen([PYTHON, "-m", "am.cli.main", "--vault", str(cli_vault), "fact", "add",
                               "Alpha caches sessions.", "--topic", "project-alpha", "--format", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env())
             for _ in range(4)]
    answers = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert sorted(a["created"] for a in answers) == [False, False, False, True]
    assert len({a["records"][0]["id"] for a in answers}) == 1
    assert run_git(cli_vault, "rev-list", "--count", f"{before}..HEAD").strip() == "1"


def test_fact_list_keeps_its_columns_for_a_long_world_or_id(tmp_path: Path) -> None:
    """The README's tour runs am fact list on the demo: the feat-rate-limit fact's world
    (project-alpha@feat-rate-limit@ee456b7, 37 characters) pushed its text out of the column, and so does a
    merge's contested copy's id (f-...-c<hash>, 31 characters)."""
    from am.demo import materialise_demo

    root = tmp_path / "demo"
    materialise_demo(root).close()
    code, out, err = am("--vault", str(root), "fact", "list")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 7
    # Each column starts at the same place on every line: status, world, text.
    for column in (1, 2, 3):
        assert len({len(line) - len(line.split(None, column)[column]) for line in lines}) == 1, out


def test_topic_rename_says_from_which_id(cli_vault: Path) -> None:
    code, out, err = am("--vault", str(cli_vault), "--actor", "tester", "topic", "rename", "project-alpha", "project-beta")
    assert code == 0, err
    # It said "renamed topic project-beta (...)", which reads as if project-beta had been renamed.
    assert out.startswith("renamed project-alpha to topic project-beta (topics/project-beta.md) in commit "), out


def test_init_with_vault_and_no_path_is_refused_not_made_here(tmp_path: Path, am_home: Path) -> None:
    # `am --vault OTHER init` made the current folder a vault (a commit, hooks), not OTHER.
    here = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(here))
    for given, example in ((str(tmp_path / "other"), f"am init {tmp_path / 'other'}"), ("mem", "am init PATH --name mem")):
        proc = _run("--vault", given, "init", cwd=here, am_home=am_home)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"not of --vault {given!r}" in proc.stderr and example in proc.stderr, proc.stderr
    assert sorted(p.name for p in here.iterdir()) == [".git"] and not (tmp_path / "other").exists()
    assert run_git(here, "rev-list", "--all") == ""
    # With the folder given, --vault naming the same vault is fine, and $AM_VAULT never stands in for PATH.
    assert _run("--vault", str(tmp_path / "other"), "init", str(tmp_path / "other"), am_home=am_home).returncode == 0
