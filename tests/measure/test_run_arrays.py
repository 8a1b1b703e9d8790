"""The lockstep-array run analysis writes the numbers of the per-episode one.

``tests/measure/reference_run.py`` is the run analysis as it was before the
arrays (one episode at a time through the 1-D functions); on real runs of
several shipped experiments both must give the same metrics.json bytes, the
same per-episode metrics, the same successes and regrets, and the same kept
trajectories.  The comparison is exact: ``row_sums`` reduces each episode in
numpy's order, so the floats are the same bits.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opar_sim.cli import main
from opar_sim.measure.metrics import row_sums, segment_sums
from opar_sim.measure.oscillation import action_cycles, action_cycles_rows, damping, damping_rows
from opar_sim.measure.run import analyze, write_metrics
from opar_sim.rundir import iter_traces
from opar_sim.rundir.columns import read_step_columns
from tests.conftest import EXPERIMENTS
from tests.measure import reference_run

# (experiment, episodes): oracle and thrash (compare_flight_booking), trials, Reflexion
# attempts, sub-agents (team), faults and guards, another task (weather)
CASES = [
    ("flight_booking", 60),
    ("compare_flight_booking", 25),
    ("flight_booking_trials", 15),
    ("reflexion", 15),
    ("team", 10),
    ("research_qa_faults", 25),
    ("guardrails", 25),
    ("weather", 25),
    ("context_rebound", 20),
]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.mark.parametrize(("name", "episodes"), CASES)
def test_array_analysis_writes_the_per_episode_numbers(tmp_path: Path, name: str, episodes: int):
    out = tmp_path / name
    argv = ["run", str(EXPERIMENTS / f"{name}.toml"), "--seed", "5", "--episodes", str(episodes)]
    assert main([*argv, "--out", str(out), "--workers", "1"]) == 0
    new = analyze(out, keep=7)
    old = reference_run.analyze(out, keep=7)
    assert new.controllers.keys() == old.controllers.keys()
    a = write_metrics(new, tmp_path / "new.json").read_bytes()
    b = reference_run.write_metrics(old, tmp_path / "old.json").read_bytes()  # type: ignore[arg-type]
    assert a == b
    assert json.loads(a)  # a real table, not an empty one
    assert len(new.episodes) == len(old.episodes) > 0
    for e, f in zip(new.episodes, old.episodes, strict=True):
        ra, rb = e.row(), f.row()
        assert ra.keys() == rb.keys()
        bad = {k: (ra[k], rb[k]) for k in ra if not _same(ra[k], rb[k])}
        assert not bad, (e.key, bad)
        assert [type(v) for v in ra.values()] == [type(v) for v in rb.values()]
    assert new.successes == old.successes
    for ref in ("oracle", "pid"):
        assert new.regret_to(ref) == old.regret_to(ref)
    assert new.traces.keys() == old.traces.keys()
    for controller, kept in old.traces.items():
        mine = new.traces[controller]
        assert len(mine) == len(kept)
        for t, u in zip(mine, kept, strict=True):
            assert (t.controller, t.episode, t.trial, t.attempt, t.agent) == (
                u.controller,
                u.episode,
                u.trial,
                u.attempt,
                u.agent,
            )
            assert t.signals == u.signals and t.actions == u.actions
            for field in ("step", "time", "progress", "estimate"):
                assert np.array_equal(getattr(t, field), getattr(u, field), equal_nan=True)
            assert t.terms.keys() == u.terms.keys()
            assert all(np.array_equal(t.terms[k], u.terms[k], equal_nan=True) for k in t.terms)


def test_step_columns_hold_every_block_of_iter_traces(tmp_path: Path):
    out = tmp_path / "team"
    argv = ["run", str(EXPERIMENTS / "team.toml"), "--episodes", "4", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    for sub in (False, True):
        traces = list(iter_traces(out, sub_agents=sub))
        columns = read_step_columns(out, sub_agents=sub)
        assert len(columns) == len(traces) > 0
        assert [columns.trace(b).agent for b in range(len(columns))] == [t.agent for t in traces]
        lengths = np.diff(columns.offsets).tolist()
        assert lengths == [len(t) for t in traces]
    assert len(read_step_columns(out, sub_agents=True)) > len(read_step_columns(out))


def test_row_sums_are_numpys_one_dimensional_sums():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(200, 40)) * 1e3
    lengths = rng.integers(0, 41, size=200)
    expected = [float(np.sum(values[i, :n])) for i, n in enumerate(lengths)]
    assert row_sums(values, lengths).tolist() == expected
    flat = np.concatenate([values[i, :n] for i, n in enumerate(lengths)])
    assert segment_sums(flat, lengths).tolist() == expected


actions = st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=16)


@settings(max_examples=300, deadline=None)
@given(st.lists(actions, min_size=1, max_size=6))
def test_action_cycles_rows_count_what_action_cycles_finds(episodes: list[list[str | None]]):
    vocab = {None: 0, "a": 1, "b": 2, "c": 3}
    width = max(len(e) for e in episodes)
    codes = np.array([[vocab[a] for a in e] + [0] * (width - len(e)) for e in episodes])
    count, longest = action_cycles_rows(codes, np.array([len(e) for e in episodes]))
    found = [action_cycles(e) for e in episodes]
    assert count.tolist() == [len(f) for f in found]
    assert longest.tolist() == [max((c.length for c in f), default=0) for f in found]


# estimates on a grid of 1/64 (the peak ratios stay finite), with noise in the last bits
level = st.integers(-64, 128).map(lambda k: k / 64)
signals = st.lists(st.one_of(level, level.map(lambda v: v + 1e-13)), min_size=1, max_size=14)


@settings(max_examples=300, deadline=None)
@given(st.lists(signals, min_size=1, max_size=6), st.sampled_from([0.0, 0.02, 0.3]))
def test_damping_rows_match_damping(rows: list[list[float]], tolerance: float):
    width = max(len(r) for r in rows)
    y = np.array([r + [r[-1]] * (width - len(r)) for r in rows])
    got = damping_rows(y, np.array([len(r) for r in rows]), tolerance=tolerance)
    for i, r in enumerate(rows):
        d = damping(r, tolerance=tolerance)
        assert got["peaks"][i] == d.peaks
        for name in ("log_decrement", "decay_ratio", "damping_ratio"):
            assert _same(float(got[name][i]), getattr(d, name)), (name, r)


def test_a_malformed_step_row_is_named_by_file_line_and_field(tmp_path: Path):
    from opar_sim.rundir import RunDirError

    out = tmp_path / "run"
    argv = ["run", str(EXPERIMENTS / "flight_booking.toml"), "--episodes", "3", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    steps = out / "steps.jsonl"
    lines = steps.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"time":', b'"time":"soon","was":', 1)
    steps.write_bytes(b"\n".join(lines))
    with pytest.raises(RunDirError, match=r"steps\.jsonl:5: field 'time': expected a number"):
        analyze(out)


def test_a_torn_last_step_line_is_skipped_like_read_jsonl_skips_it(tmp_path: Path):
    out = tmp_path / "run"
    argv = ["run", str(EXPERIMENTS / "flight_booking.toml"), "--episodes", "3", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    whole = analyze(out)
    steps = out / "steps.jsonl"
    steps.write_bytes(steps.read_bytes() + b'{"episode": 9, "ste')
    torn = analyze(out)
    assert len(torn.episodes) == len(whole.episodes) == 3
    assert json.dumps([e.row() for e in torn.episodes]) == json.dumps(
        [e.row() for e in whole.episodes]
    )


def _columns_equal(a, b) -> None:
    assert (a.controllers, a.agent, a.signals, a.actions) == (
        b.controllers,
        b.agent,
        b.signals,
        b.actions,
    )
    for field in (
        "controller",
        "episode",
        "trial",
        "attempt",
        "offsets",
        "step",
        "signal",
        "action",
    ):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    for field in ("time", "progress", "estimate"):
        assert np.array_equal(getattr(a, field), getattr(b, field), equal_nan=True), field


@pytest.mark.parametrize("name", ["flight_booking_trials", "team"])
def test_step_columns_read_in_small_blocks_are_the_whole_files(tmp_path: Path, monkeypatch, name):
    from opar_sim.rundir import columns as module

    out = tmp_path / name
    argv = ["run", str(EXPERIMENTS / f"{name}.toml"), "--episodes", "6", "--out", str(out)]
    assert main([*argv, "--workers", "1"]) == 0
    steps = out / "steps.jsonl"
    # a torn last line, as an interrupted write leaves it, is skipped like the whole-file read did
    steps.write_bytes(steps.read_bytes() + b'{"episode": 9, "step"')
    whole = module._fast(out, True)  # the fast path itself (read_step_columns falls back)
    checked = module._from_traces(out, sub_agents=True)
    _columns_equal(whole, checked)
    raw = steps.read_bytes().split(b"\n")[:-1]
    assert whole.line.tolist() == np.cumsum([0] + [len(r) + 1 for r in raw[:-1]]).tolist()
    fields = ("episode", "controller", "success", "steps", "tokens", "trial")
    rows = module._fast_episodes(out, fields)
    assert rows == [{k: r[k] for k in fields if k in r} for r in module.iter_episodes(out)]
    for block in (1, 300, 5_000):  # a line a block, and blocks that end mid-episode
        monkeypatch.setattr(module, "_BLOCK_BYTES", block)
        small = module._fast(out, True)
        _columns_equal(small, whole)
        assert np.array_equal(small.line, whole.line)
        assert module._fast_episodes(out, fields) == rows
    assert len(whole) > 0 and whole.trial.max() >= (2 if name.endswith("trials") else 1)
