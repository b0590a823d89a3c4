"""Acceptance: a real Obsidian-side Git client (isomorphic-git, the engine of obsidian-git on mobile) and am.

isomorphic-git (npm, run by the machine's Node.js; installed by `npm ci` from tests/js/package.json
and its committed package-lock.json, which pins every version, into the git-ignored
tests/js/node_modules) clones a vault am wrote over smart HTTP
(git http-backend on 127.0.0.1, served by this test), reads every record, commits a
hand edit and pushes it to the bare remote. am then pulls it in with the git CLI
(through its hooks), reads the edit, its cache follows, and `git fsck --strict` is clean.
Skipped, with the reason printed, only when node or npm is absent.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import GIT_IDENTITY, fsck_clean, run_git

from am.cli.main import cli

JS = Path(__file__).resolve().parent / "js"


def am(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _node_modules() -> None:
    """Install isomorphic-git exactly as tests/js/package-lock.json pins it (npm ci), unless that version is there."""
    lock = json.loads((JS / "package-lock.json").read_text(encoding="utf-8"))
    pinned = lock["packages"]["node_modules/isomorphic-git"]["version"]
    installed = JS / "node_modules" / "isomorphic-git" / "package.json"
    if installed.is_file() and json.loads(installed.read_text(encoding="utf-8")).get("version") == pinned:
        return
    proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


class _GitHTTP(BaseHTTPRequestHandler):
    """Smart HTTP for the repositories under ``server.root``: each request is one run of git http-backend."""

    server: _Server

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            **os.environ, "GIT_PROJECT_ROOT": str(self.server.root), "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path, "QUERY_STRING": query, "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1", "REMOTE_USER": "phone",
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
        head, _, payload = proc.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = proc.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = _serve
    do_POST = _serve

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    root: Path


@pytest.fixture
def git_http(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Serve tmp_path/served over smart HTTP on 127.0.0.1; yield (base URL, folder)."""
    served = tmp_path / "served"
    served.mkdir()
    server = _Server(("127.0.0.1", 0), _GitHTTP)
    server.root = served
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        server.shutdown()
        server.server_close()


def test_isomorphic_git_clones_edits_and_pushes_and_am_follows(vault_path: Path, tmp_path: Path,
                                                               git_http: tuple[str, Path]) -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        print(f"skipped: {' and '.join(missing)} not installed; the isomorphic-git acceptance test needs them")
        pytest.skip(f"{' and '.join(missing)} not installed")
    _node_modules()
    base, served = git_http
    root = vault_path
    am("init", str(root), "--obsidian")
    v = ["--vault", str(root)]
    am(*v, "topic", "add", "project-alpha", "--title", "Alpha service")
    am(*v, "topic", "add", "tool-redis", "--title", "Redis", "--kind", "tool")
    am(*v, "relation", "add", "project-alpha", "depends-on", "tool-redis")
    am(*v, "fact", "add", "Alpha keeps sesions in Redis.", "--topic", "project-alpha", "--id", "fact-sessions")
    am(*v, "fact", "add", "Alpha 的用户服务在 main 上只有 getUser。", "--topic", "project-alpha", "--id", "fact-zh")
    am(*v, "hooks", "install")
    expected = {p: Path(p).stem for p in run_git(root, "ls-files", "topics", "facts", "relations").split("\n") if p}
    fact_path = next(p for p in expected if p.endswith("fact-sessions.md"))
    bare = served / "vault.git"
    run_git(tmp_path, "clone", "-q", "--bare", str(root), str(bare))
    run_git(bare, "config", "http.receivepack", "true")
    run_git(root, "remote", "add", "origin", str(bare))

    phone = tmp_path / "phone"
    proc = subprocess.run(["node", str(JS / "obsidian_side.mjs"), f"{base}/vault.git", str(phone), fact_path,
                           "Alpha keeps sessions in Redis (typo fixed on the phone)."],
                          capture_output=True, text=True, timeout=300, cwd=JS)
    assert proc.returncode == 0, proc.stderr
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    ids = {p: i for p, i in said["records"].items()}
    # Every record am wrote, read by isomorphic-git (readable names: the file name is not always the id).
    assert set(ids) == set(expected)
    assert sorted(ids.values()) == sorted(["project-alpha", "tool-redis", "project-alpha--depends-on--tool-redis",
                                           "fact-sessions", "fact-zh"])
    assert said["pushed"] is True
    assert run_git(bare, "rev-parse", "HEAD").strip() == said["commit"]
    fsck_clean(bare)

    before = am(*v, "search", "phone")  # the cache is warm and does not know the word yet
    assert "fact-sessions" not in before
    env = {**os.environ, **GIT_IDENTITY}
    pull = subprocess.run(["git", "-C", str(root), "pull", "-q", "--ff-only", "origin", "main"],
                          capture_output=True, text=True, env=env)
    assert pull.returncode == 0, pull.stderr
    assert "typo fixed on the phone" in am(*v, "fact", "show", "fact-sessions")
    assert "fact-sessions" in am(*v, "search", "phone")
    assert am(*v, "check").startswith("ok:")
    assert run_git(root, "log", "-1", "--format=%an %s").strip() == "Phone Person vault backup: hand edit on the phone"
    assert run_git(root, "status", "--porcelain").strip() == ""
    fsck_clean(root)
