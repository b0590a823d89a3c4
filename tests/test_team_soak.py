"""The team soak (issue 36 item 16): clones of one vault writing and syncing at once through one Git server.

tests/teamsoak.py runs it and says what must hold. The default suite runs a
small one (three clones, a few writes each, kills of writes and syncs); the
stress run writes for a minute on seven clones, two agents each.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from teamsoak import BOUND, Plan, soak


def test_a_small_team_loses_no_acknowledged_fact_and_converges(tmp_path: Path) -> None:
    outcome = soak(tmp_path, Plan(clones=3, writers=1, writes=3, kill_write=0.2, kill_sync=0.3))
    summary = outcome.summary()
    assert summary["writes_killed"] and summary["syncs_killed"], summary  # the run had its kills
    assert outcome.rounds <= BOUND


@pytest.mark.stress
def test_a_team_of_seven_clones_writing_and_syncing_for_a_minute(tmp_path: Path) -> None:
    outcome = soak(tmp_path, Plan(clones=7, writers=2, seconds=60, kill_write=0.1, kill_sync=0.25, seed=3616))
    summary = outcome.summary()
    print(summary)
    assert summary["writes_killed"] and summary["syncs_killed"], summary
    assert summary["acknowledged"] >= 20, summary
