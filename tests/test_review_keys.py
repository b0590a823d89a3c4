"""`am review -i` through a real process: answers from a pipe, a refusal without one, single keys in a terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import termios
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PYTHON, run_git, subprocess_env

from am.vault import Vault


@pytest.fixture
def queue(alpha: Any) -> Vault:
    """Three pending facts: fact-a, fact-b, fact-c."""
    vault: Vault = alpha
    for fid, text in (("fact-a", "Deploys go out on Tuesdays."), ("fact-b", "Staging is in eu-west-1."),
                      ("fact-c", "The CI runs on every push.")):
        vault.add_fact(text, topics=["project-alpha"], id=fid)
        vault.set_fact_status(fid, "pending-review")
    return vault


def _review(root: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    # A new session has no controlling terminal: /dev/tty cannot be opened, as under cron, CI or an agent.
    return subprocess.run([PYTHON, "-m", "am.cli.main", "--vault", str(root), "--actor", "carol", "review", "-i"],
                          capture_output=True, text=True, env=subprocess_env(), start_new_session=True, check=False,
                          **kw)


def _status(root: Path, fid: str) -> str:
    with Vault.open(root) as v:
        return v.get_fact(fid).status


def test_answers_piped_to_review_i_are_read_one_a_line(queue: Vault) -> None:
    root = queue.root
    head = run_git(root, "rev-parse", "HEAD").strip()
    # fact-a: accept; fact-b: 'x' is no choice, then reject (a word: its first letter) with a reason; fact-c: next.
    done = _review(root, input="a\nx\nreject\nwrong region\nn\n")
    # Before: "could not finish the command (/dev/tty): No such device or address ... retry", exit 12.
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(1/3) [pending review] fact-a" in done.stdout and "2 decision(s) made" in done.stdout
    assert run_git(root, "rev-list", "--count", f"{head}..HEAD").strip() == "2"
    assert [_status(root, f) for f in ("fact-a", "fact-b", "fact-c")] == ["active", "expired", "pending-review"]
    assert set(run_git(root, "log", "-2", "--format=%an").split()) == {"carol"}


def test_a_piped_supersede_reads_its_text_and_the_end_of_input_quits(queue: Vault) -> None:
    root = queue.root
    done = _review(root, input="s\nDeploys go out on Wednesdays.\nmoved\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 decision(s) made (end of input)" in done.stdout
    assert _status(root, "fact-a") == "superseded"
    with Vault.open(root) as v:
        assert "Deploys go out on Wednesdays." in [f.body.strip() for f in v.list_facts()]


def test_input_that_ends_inside_a_decision_makes_none(queue: Vault) -> None:
    root = queue.root
    head = run_git(root, "rev-parse", "HEAD").strip()
    done = _review(root, input="e\n")  # expire asks for a reason; the input ends first
    assert done.returncode == 2, done.stdout + done.stderr
    assert "input ended before the answer to 'reason': fact-a is not decided" in done.stderr
    assert "Traceback" not in done.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == head and _status(root, "fact-a") == "pending-review"


@pytest.mark.parametrize("stdin", ["empty", "closed"])
def test_review_i_without_a_terminal_or_answers_is_refused_clearly(queue: Vault, stdin: str) -> None:
    root = queue.root
    head = run_git(root, "rev-parse", "HEAD").strip()
    if stdin == "empty":
        done = _review(root, stdin=subprocess.DEVNULL)
    else:
        done = _review(root, stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "am review -i" in done.stderr and "printf 'a\\nq\\n' | am review -i" in done.stderr, done.stderr
    assert "/dev/tty" not in done.stderr and "Traceback" not in done.stderr
    assert run_git(root, "rev-parse", "HEAD").strip() == head


def test_review_i_in_a_terminal_still_takes_single_keys(queue: Vault) -> None:
    root = queue.root
    master, slave = pty.openpty()
    proc = subprocess.Popen([PYTHON, "-m", "am.cli.main", "--vault", str(root), "--actor", "carol", "review", "-i"],
                            stdin=slave, stdout=slave, stderr=slave, env=subprocess_env(), start_new_session=True)
    os.close(slave)
    said = b""
    deadline = time.monotonic() + 120  # only so that a broken read cannot hang the suite
    # poll, not select.select: that refuses a descriptor numbered past 1023, as one may be late in a long run.
    readable = select.poll()
    readable.register(master, select.POLLIN)

    def until(text: bytes) -> None:
        nonlocal said
        while text not in said:
            assert time.monotonic() < deadline, said.decode(errors="replace")
            if readable.poll(1000):
                try:
                    said += os.read(master, 4096)
                except OSError:  # the process ended and closed the terminal
                    break
        assert text in said, said.decode(errors="replace")

    def key(k: bytes) -> None:
        # Typed once the terminal is raw (reading a key): going raw drops what was typed before (TCSAFLUSH).
        while termios.tcgetattr(master)[3] & termios.ICANON:
            assert time.monotonic() < deadline and proc.poll() is None, said.decode(errors="replace")
            time.sleep(0.05)
        os.write(master, k)  # one key, no Enter

    try:
        until(b"(1/3)")
        until(b"[q]uit")
        key(b"a")
        until(b"(2/3)")
        until(b"[q]uit")
        key(b"q")
        until(b"1 decision(s) made")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert _status(root, "fact-a") == "active" and _status(root, "fact-b") == "pending-review"
