"""`am serve`: a real server in a subprocess on a free port, real HTTP requests, the CLI and git as oracles.

It answers only on 127.0.0.1, refuses a foreign Host or Origin, has no route
that takes anything but GET, and what its JSON says is what `am slice`,
`am log` and `am fact list` say for the same world.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env
from test_graph import am, demo, uses  # noqa: F401 -- the module's demo fixture and helpers

ROUTES = ["/", "/static/app.js", "/api/worlds", "/api/graph", "/api/topic/tool-redis", "/api/log", "/api/review",
          "/api/numbers", "/export/graph.html"]


class Server:
    def __init__(self, root: Path, home: Path) -> None:
        self.proc = subprocess.Popen([PYTHON, "-m", "am.cli.main", "--vault", str(root), "serve", "--port", "0"],
                                     cwd=root, env=subprocess_env(AM_HOME=str(home)), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        assert "serving http://127.0.0.1:" in line, line
        self.port = int(line.split("127.0.0.1:")[1].split("/")[0])
        self.host = f"127.0.0.1:{self.port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.05)

    def request(self, path: str, *, method: str = "GET", headers: dict[str, str] | None = None,
                body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for key, value in {"Host": self.host, **(headers or {})}.items():
            conn.putheader(key, value)
        conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders(body)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def json(self, path: str) -> Any:
        status, headers, data = self.request(path)
        assert status == 200, data
        assert headers["content-type"].startswith("application/json")
        return json.loads(data)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


@pytest.fixture(scope="module")
def server(demo: tuple[Path, Path]) -> Iterator[Server]:  # noqa: F811
    started = Server(*demo)
    yield started
    started.stop()


def _listening(port: int) -> set[str]:
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:
                found.add(address)
    return found


def test_only_loopback_and_only_its_own_host_and_origin(server: Server) -> None:
    if Path("/proc/net/tcp").exists():
        assert _listening(server.port) == {"0100007F"}  # 127.0.0.1, nothing else
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", server.port), timeout=2).close()
    for path in ROUTES:
        assert server.request(path)[0] == 200, path
        assert server.request(path, headers={"Host": f"evil.example:{server.port}"})[0] == 421, path
        assert server.request(path, headers={"Host": "127.0.0.1"})[0] == 421, path  # no port: not this server
        assert server.request(path, headers={"Origin": "http://evil.example"})[0] == 403, path
        assert server.request(path, headers={"Origin": f"http://127.0.0.1:{server.port + 1}"})[0] == 403, path
        assert server.request(path, headers={"Origin": f"http://{server.host}"})[0] == 200, path
    status, _, body = server.request("/api/worlds", headers={"Host": "evil.example"})
    assert b"Host refused" in body and status == 421


def test_no_route_writes(server: Server, demo: tuple[Path, Path]) -> None:  # noqa: F811
    root = demo[0]
    head, status, used = run_git(root, "rev-parse", "HEAD"), run_git(root, "status", "--porcelain"), uses(root)
    tree = run_git(root, "ls-files", "-s")
    for path in ROUTES:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            code, _, _ = server.request(path, method=method, body=b'{"text": "x"}',
                                        headers={"Content-Type": "application/json"})
            assert code == 405, (method, path, code)
    for path in ROUTES:  # every read once more, in another world
        assert server.request(path + ("&" if "?" in path else "?") + "repo=project-alpha&branch=feat-batch")[0] == 200
    assert run_git(root, "rev-parse", "HEAD") == head
    assert run_git(root, "status", "--porcelain") == status
    assert run_git(root, "ls-files", "-s") == tree
    assert uses(root) == used  # looking counts no use (the CLI's slice would)


def test_the_page_fetches_nothing_from_elsewhere(server: Server) -> None:
    status, headers, body = server.request("/")
    assert status == 200 and "default-src 'self'" in headers["content-security-policy"]
    page = body.decode()
    assert re.findall(r'(?:src|href)="([^"]+)"', page) == ["/static/style.css", "/export/graph.html",
                                                          "/static/graph.js", "/static/app.js"]
    for name in ("app.js", "graph.js", "style.css"):
        status, headers, body = server.request(f"/static/{name}")
        assert status == 200 and headers["x-content-type-options"] == "nosniff"
        assert re.findall(r"https?://[^\s\"']+", body.decode()) in ([], ["http://www.w3.org/2000/svg"])
        assert "innerHTML" not in body.decode()  # vault text goes in as text, never as markup
    # The exported file runs its own inline script, which this server's CSP forbids: it is a download, never a page.
    status, headers, _ = server.request("/export/graph.html")
    assert status == 200 and headers["content-disposition"] == 'attachment; filename="am-graph.html"'
    assert server.request("/static/../vault.py")[0] == 404
    assert server.request("/static/nothing.js")[0] == 404


def test_graph_and_topic_are_the_cli_s_answers(server: Server, demo: tuple[Path, Path]) -> None:  # noqa: F811
    worlds = server.json("/api/worlds")
    assert worlds["vault"] == "demo"
    assert [r["name"] for r in worlds["repos"]] == ["project-alpha"]
    assert worlds["repos"][0]["branches"] == ["feat-batch", "feat-rate-limit", "main"]
    for branch in ("main", "feat-rate-limit"):
        api = server.json(f"/api/graph?repo=project-alpha&branch={branch}")
        assert api == json.loads(am(demo, "graph", "--repo", "project-alpha", "--branch", branch, "--format", "json"))
        assert server.json(f"/api/graph?repo=project-alpha&branch={branch}") == api  # the kept layout, the same
    near = server.json("/api/graph?repo=project-alpha&branch=main&topic=tool-redis&depth=1")
    assert {n["id"] for n in near["nodes"]} == {"tool-redis", "project-alpha"}
    shown = {}
    for branch in ("main", "feat-rate-limit"):
        api = server.json(f"/api/topic/project-alpha?repo=project-alpha&branch={branch}")
        cli = json.loads(am(demo, "slice", "--repo", "project-alpha", "--branch", branch, "--topic", "project-alpha",
                            "--depth", "0", "--max-tokens", "0", "--format", "json"))
        assert api["command"] == (f"am slice --repo project-alpha --branch {branch} --topic project-alpha --depth 0"
                                  " --max-tokens 0")
        del api["command"]
        assert api == cli  # the same pack, byte for byte as JSON
        shown[branch] = [f["id"] for t in api["topics"] for f in t["facts"]]
    assert shown["main"] != shown["feat-rate-limit"]
    status, _, body = server.request("/api/topic/tool-nothing")
    assert status == 404 and "tool-nothing" in json.loads(body)["error"]
    status, _, body = server.request("/api/graph?depth=deep")
    assert status == 400 and json.loads(body)["hint"]
    status, _, body = server.request("/api/graph?repo=project-alpha&branch=no-such-branch")
    assert status == 404 and "no-such-branch" in json.loads(body)["error"]  # as the CLI's exit 13: no such world


def test_activity_is_am_log_with_undo_commands(server: Server, demo: tuple[Path, Path]) -> None:  # noqa: F811
    root = demo[0]
    feed = server.json("/api/log")
    commits = run_git(root, "log", "--format=%H").split()
    assert [e["commit"] for e in feed["entries"]] == commits
    assert feed["entries"] == [{**e, "undo": feed["entries"][i]["undo"]}
                               for i, e in enumerate(json.loads(am(demo, "log", "--format", "json")))]
    authors = [a for a in run_git(root, "log", "--format=%(trailers:key=Am-Actor,valueonly)").splitlines() if a]
    assert feed["actors"] == {a: authors.count(a) for a in sorted(set(authors))}
    for entry in feed["entries"]:
        if entry["op"] == "vault.init":
            assert entry["undo"] is None
        else:
            assert entry["undo"] == f"am undo {entry['commit'][:10]}"
    only = server.json("/api/log?actor=li-wei&op=relation")
    assert only["entries"] and {(e["actor"], e["op"]) for e in only["entries"]} == {("li-wei", "relation.add")}


def test_review_and_numbers(server: Server, demo: tuple[Path, Path]) -> None:  # noqa: F811
    review = server.json("/api/review?repo=project-alpha&branch=main")
    facts = json.loads(am(demo, "fact", "list", "--format", "json"))
    assert [f["id"] for f in review["contested"]] == [f["id"] for f in facts if f["status"] == "contested"]
    assert [f["id"] for f in review["pending"]] == [f["id"] for f in facts if f["status"] == "pending-review"]
    stale = json.loads(am(demo, "stale", "--repo", "project-alpha", "--branch", "main", "--format", "json"))
    assert [f["id"] for f in review["stale"]] == [s["id"] for s in stale["stale"]]
    assert review["contested"][0]["choices"] == ["accept", "supersede", "expire"]  # the CLI queue's (am review)
    assert review["contested"][0]["commands"][0] == f"am review accept {review['contested'][0]['id']}"
    numbers = server.json("/api/numbers")
    counts: dict[str, int] = {}
    for fact in facts:
        counts[fact["status"]] = counts.get(fact["status"], 0) + 1
    assert numbers["by_status"] == counts and numbers["facts"] == len(facts)
    assert sum(numbers["by_week"].values()) == len(facts)
    assert {w["branch"] for w in numbers["worlds"]} == {"main", "feat-batch", "feat-rate-limit"}
    for world in numbers["worlds"]:  # counted without a pack: the facts of the CLI's full pack of that branch
        pack = json.loads(am(demo, "slice", "--repo", "project-alpha", "--branch", world["branch"], "--max-tokens", "0",
                             "--format", "json"))
        assert world["facts"] == pack["holds"]["facts"]
    assert numbers["worlds_left_out"] == []
    # The full pack's size: of the picker's world only (a pack per branch cost seconds each at 20k facts).
    feat = server.json("/api/numbers?repo=project-alpha&branch=feat-batch")
    pack = am(demo, "slice", "--repo", "project-alpha", "--branch", "feat-batch", "--max-tokens", "0")
    assert feat["pack"]["bytes"] == len(pack.encode("utf-8")) and feat["pack"]["branch"] == "feat-batch"
    assert feat["pack"]["command"] == "am slice --repo project-alpha --branch feat-batch --max-tokens 0"
    index = json.loads(am(demo, "index", "status", "--format", "json"))
    assert numbers["cache"]["ok"] and numbers["cache"]["records"] == index["records"]


def test_review_offers_the_cli_queue_s_choices_by_its_rule(alpha, am_home: Path, tmp_path: Path) -> None:
    from conftest import commit_file

    from am.registry import Registry

    code_repo = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code_repo))
    first = commit_file(code_repo, "users.py", "def get_user(id): pass")
    Registry.load().add_repo("project-alpha", code_repo)
    alpha.add_fact("getUser takes one id.", topics=["project-alpha"], id="fact-users", repo="project-alpha",
                   branch="main", commit=first, paths=("users.py",))
    run_git(code_repo, "checkout", "-q", "-b", "feat-batch")
    alpha.add_fact("The batch work starts from getUser.", topics=["project-alpha"], id="fact-batch",
                   repo="project-alpha", branch="feat-batch", paths=("users.py",))
    commit_file(code_repo, "users.py", "def get_users(ids): pass")
    alpha.add_fact("Maybe it caches.", topics=["project-alpha"], id="fact-pending")
    alpha.set_fact_status("fact-pending", "pending-review")
    root = alpha.root
    head = run_git(root, "rev-parse", "HEAD")
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "review", "list", "--repo",
                           "project-alpha", "--branch", "feat-batch", "--no-diff", "--format", "json"],
                          capture_output=True, text=True, env=subprocess_env(AM_HOME=str(am_home)), check=True)
    cli = {i["id"]: i["choices"] for i in json.loads(proc.stdout)["items"]}
    server = Server(root, am_home)
    try:
        review = server.json("/api/review?repo=project-alpha&branch=feat-batch")
    finally:
        server.stop()
    web = {f["id"]: f for f in review["stale"] + review["pending"]}
    assert {fid: f["choices"] for fid, f in web.items()} == cli
    # Main's fact, stale on feat-batch: no confirm (it would take it off main), a supersede on feat-batch only.
    assert cli["fact-users"] == ["supersede"]
    assert web["fact-users"]["commands"] == [
        "am why fact-users", "am review supersede fact-users --text '...' --repo project-alpha --branch feat-batch"]
    assert "confirming it here would take it off main" in web["fact-users"]["note"]
    assert "am review confirm fact-batch --repo project-alpha --branch feat-batch" in web["fact-batch"]["commands"]
    assert run_git(root, "rev-parse", "HEAD") == head


def test_requests_at_once_get_the_answers_they_get_one_by_one(server: Server) -> None:
    # The library runs on several threads, each with its own vault: a slow page (Numbers, Review) no longer
    # holds up the others, and answers given side by side are the ones given alone (no timing asserted).
    from concurrent.futures import ThreadPoolExecutor

    paths = ["/api/worlds", "/api/graph?repo=project-alpha&branch=main", "/api/topic/tool-redis",
             "/api/review?repo=project-alpha&branch=main", "/api/numbers", "/api/log?limit=50",
             "/api/graph?repo=project-alpha&branch=feat-batch", "/api/numbers?repo=project-alpha&branch=feat-batch"]
    alone = {path: server.json(path) for path in paths}
    with ThreadPoolExecutor(max_workers=len(paths) * 2) as pool:
        together = list(pool.map(server.json, paths * 3))
    assert together == [alone[path] for path in paths * 3]


def test_a_pending_fact_that_is_stale_is_listed_once_as_the_cli_queue_lists_it(alpha, am_home: Path,
                                                                                 tmp_path: Path) -> None:
    from conftest import commit_file

    from am.registry import Registry

    code_repo = tmp_path / "code"
    run_git(tmp_path, "init", "-q", "-b", "main", str(code_repo))
    first = commit_file(code_repo, "users.py", "def get_user(id): pass")
    Registry.load().add_repo("project-alpha", code_repo)
    alpha.add_fact("getUser may take a list.", topics=["project-alpha"], id="fact-maybe", repo="project-alpha",
                   branch="main", commit=first, paths=("users.py",))
    alpha.set_fact_status("fact-maybe", "pending-review")
    commit_file(code_repo, "users.py", "def get_users(ids): pass")
    proc = subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(alpha.root), "review", "list", "--repo",
                           "project-alpha", "--branch", "main", "--no-diff", "--format", "json"],
                          capture_output=True, text=True, env=subprocess_env(AM_HOME=str(am_home)), check=True)
    assert [(i["id"], i["kind"]) for i in json.loads(proc.stdout)["items"]] == [("fact-maybe", "pending")]
    server = Server(alpha.root, am_home)
    try:
        review = server.json("/api/review?repo=project-alpha&branch=main")
    finally:
        server.stop()
    assert [f["id"] for f in review["pending"]] == ["fact-maybe"]
    assert review["stale"] == []


def test_a_taken_port_is_one_line(server: Server, demo: tuple[Path, Path]) -> None:  # noqa: F811
    err = am(demo, "serve", "--port", str(server.port), code=2)
    assert err.startswith("Error: cannot listen on 127.0.0.1:") and "--port" in err and len(err.splitlines()) == 1



def test_the_page_s_scripts_parse() -> None:
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the scripts' syntax is checked by the browser test alone")
    static = Path(__file__).resolve().parent.parent / "am" / "web" / "static"
    for script in sorted(static.glob("*.js")):
        proc = subprocess.run([node, "--check", str(script)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
