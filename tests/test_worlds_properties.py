"""Properties of worlds and packs on the demo vault: `am why` agrees with `am slice`; a budget is never exceeded."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from am.demo import DEMO_CODE_COMMITS
from am.packs.pack import SliceRequest, estimate_tokens, render_markdown
from am.packs.slice import slice_vault
from am.packs.why import why_fact
from am.worlds.rules import to_moment

_WORLDS: list[tuple[str | None, str | None, str | None]] = [
    (None, None, None),
    ("project-alpha", "main", None), ("project-alpha", "feat-batch", None), ("project-alpha", "feat-rate-limit", None),
    *[("project-alpha", None, sha) for sha in DEMO_CODE_COMMITS.values()],
    # A branch with a commit of its own: C4 is on feat-rate-limit only, and (main, C4) is refused since issue 33.4
    # (a commit off the branch named with it; tests/test_refusals.py).
    *[("project-alpha", "feat-rate-limit" if label == "C4" else "main", sha[:7])
      for label, sha in DEMO_CODE_COMMITS.items()],
]


_HOME: list[Path] = []


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import os

    from am.demo import materialise_demo

    home = tmp_path_factory.mktemp("demo-home")
    _HOME[:] = [home]
    old = os.environ.get("AM_HOME")
    os.environ["AM_HOME"] = str(home)
    try:
        vault = materialise_demo(tmp_path_factory.mktemp("d") / "demo")
    finally:
        if old is None:
            os.environ.pop("AM_HOME", None)
        else:
            os.environ["AM_HOME"] = old
    yield vault
    vault.close()


@pytest.fixture(autouse=True)
def _demo_home(am_home: Path, demo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The module's demo was registered in its own $AM_HOME; every test here reads that registry.
    monkeypatch.setenv("AM_HOME", str(_HOME[0]))


def _fact_ids(vault: Any) -> list[str]:
    return [f.id for f in vault.list_facts()]


def _shown(pack_text: str) -> set[str]:
    return set(re.findall(r"^  \(`([a-z0-9-]+)`", pack_text, flags=re.MULTILINE))


@pytest.mark.parametrize("include_pending", [False, True])
@pytest.mark.parametrize("world", _WORLDS, ids=lambda w: "/".join(x[:7] if x else "-" for x in w))
def test_why_agrees_with_slice_for_every_fact_in_every_world(demo: Any, world: tuple[str | None, ...],
                                                             include_pending: bool) -> None:
    repo, branch, commit = world
    request = SliceRequest(repo=repo, branch=branch, commit=commit, max_tokens=0, include_pending=include_pending)
    shown = _shown(render_markdown(slice_vault(demo, request)))
    for fid in _fact_ids(demo):
        explanation = why_fact(demo, fid, request)
        assert explanation.holds == (fid in shown), (world, fid, explanation.render())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=st.sampled_from(_WORLDS),
       at=st.sampled_from([None, "2026-08-01", "2026-09-02T00:00:00+08:00", "2027-01-01"]))
def test_why_agrees_with_slice_at_any_valid_time(demo: Any, world: tuple[str | None, ...], at: str | None) -> None:
    repo, branch, commit = world
    request = SliceRequest(repo=repo, branch=branch, commit=commit, max_tokens=0,
                           at=None if at is None else to_moment(at), at_label=at or "now")
    shown = _shown(render_markdown(slice_vault(demo, request)))
    for fid in _fact_ids(demo):
        assert why_fact(demo, fid, request).holds == (fid in shown), (world, at, fid)


_PINNED = "f-20260924-1400-b31f07"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=50, max_value=8000), compact=st.booleans(),
       world=st.sampled_from(_WORLDS[:4]))
def test_a_pack_never_exceeds_its_budget(demo: Any, budget: int, compact: bool, world: tuple[str | None, ...]) -> None:
    repo, branch, commit = world
    request = SliceRequest(repo=repo, branch=branch, commit=commit, max_tokens=budget, compact=compact)
    text = render_markdown(slice_vault(demo, request))
    assert estimate_tokens(text) <= budget
    shown = _shown(text) if not compact else set(re.findall(r"\(`([a-z0-9-]+)` ·", text))
    # Pinned facts come first: whenever anything is shown, the pinned fact is.
    if shown:
        assert _PINNED in shown, text


def test_pinned_facts_survive_any_budget_that_fits_them(demo: Any) -> None:
    def shows_pinned(budget: int) -> bool:
        text = render_markdown(slice_vault(demo, SliceRequest(max_tokens=budget)))
        assert estimate_tokens(text) <= budget
        return _PINNED in text

    # The smallest budget that shows it ...
    low, high = 50, 8000
    while low < high:
        mid = (low + high) // 2
        if shows_pinned(mid):
            high = mid
        else:
            low = mid + 1
    # ... shows it in every budget above (a pinned fact is the last thing a tighter budget gives up) ...
    assert all(shows_pinned(b) for b in range(low, low + 400, 7))
    # ... and is no more than the header, the pinned section and the note on what was left out.
    full = render_markdown(slice_vault(demo, SliceRequest(max_tokens=low)))
    assert _shown(full) == {_PINNED}
    assert estimate_tokens(full) <= low
