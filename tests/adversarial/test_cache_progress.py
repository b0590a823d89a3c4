"""The first command on a fresh clone of a large vault shows a real progress bar on a terminal, nothing on a pipe.

Issue 14: the first command printed "indexing" and blocked 6-9 s at 20k
facts. Now, when standard error is a terminal, a bar says how many files of
how many, the rate and the time left; on a pipe standard error stays empty.
The bar's delay (1 s) is set to 0 here so a small vault shows it.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from am.records.model import Fact
from am.vault import Vault
from tests.conftest import PYTHON, subprocess_env

RUN = ("import sys, am.cli.progress as p; p.DELAY = 0.0; from am.cli.main import main; "
       "sys.argv[0] = 'am'; main()")
FACTS = 1200


@pytest.fixture
def cold(alpha: Vault, vault_path: Path) -> Path:
    """A vault of FACTS facts whose cache is gone (a fresh clone)."""
    records = [Fact(id=f"fact-{i:05d}", topics=("project-alpha",), body=f"Alpha fact number {i}.\n",
                    created="2026-09-23T12:00:00+08:00") for i in range(FACTS)]
    alpha.import_records(records, source="test", batch_size=FACTS)
    alpha.close()
    shutil.rmtree(vault_path / ".am/cache")
    return vault_path


def test_a_bar_on_a_terminal(cold: Path, tmp_path: Path) -> None:
    main, side = pty.openpty()
    listing = tmp_path / "out.json"
    try:
        with listing.open("wb") as sink:  # a file, not a pipe: nothing can fill up while the terminal is read
            proc = subprocess.Popen([PYTHON, "-c", RUN, "--vault", str(cold), "fact", "list", "--format", "json"],
                                    stdout=sink, stderr=side, env=subprocess_env())
        os.close(side)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(timeout=120)
    finally:
        os.close(main)
    assert proc.returncode == 0
    assert len(json.loads(listing.read_text())) == FACTS
    shown = b"".join(chunks).decode("utf-8", "replace")
    frames = [f for f in shown.split("\r") if f.strip()]
    assert frames, repr(shown)
    total = FACTS + 1  # the facts and the topic
    pattern = re.compile(rf"indexing .* ([\d,]+)/{total:,} files +[\d,]+/s +(\d+ s left|\d+ min \d+ s left)")
    counts = [int(m.group(1).replace(",", "")) for f in frames if (m := pattern.search(f))]
    assert counts and all(0 < c < total for c in counts), frames
    assert shown.endswith("\r") or shown.rstrip(" ").endswith("\r"), repr(shown[-80:])  # the line is cleared


def test_nothing_on_a_pipe(cold: Path) -> None:
    proc = subprocess.run([PYTHON, "-c", RUN, "--vault", str(cold), "fact", "list", "--format", "json"],
                          capture_output=True, text=True, env=subprocess_env(), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(json.loads(proc.stdout)) == FACTS
