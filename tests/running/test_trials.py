"""Repeated trials of each world: rows, summary.json, pass^k over worlds, resume, spec checks."""

from __future__ import annotations

import json
import math
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from opar_sim.measure.run import analyze
from opar_sim.rundir import resume_point
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes, with_overrides
from opar_sim.spec.schema import ExperimentSpec, SpecError, validate_spec
from tests.conftest import EXPERIMENTS

WORLDS = 8
TRIALS = 4


def _spec(trials: int = TRIALS) -> ExperimentSpec:
    spec = with_overrides(load_spec(EXPERIMENTS / "flight_booking_trials.toml"), episodes=WORLDS)
    pid = spec.controller.model_dump()
    changes = {"trials": trials, "compare": [pid, {"name": "threshold", "params": {}}]}
    return apply_changes(spec, changes, "test")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def trials_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trials") / "run"
    run_experiment(_spec(), out)
    return out


def _direct(rows: list[dict]) -> dict[str, dict[int, list[bool]]]:
    """Controller -> episode -> successes of its trials, straight from the episode lines."""
    worlds: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        worlds[row["controller"]][row["episode"]].append(row["success"])
    return worlds


def test_the_shipped_trials_spec_runs_100_worlds_4_times():
    spec = load_spec(EXPERIMENTS / "flight_booking_trials.toml")
    assert (spec.task.name, spec.episodes, spec.trials) == ("flight_booking", 100, 4)


def test_every_row_names_its_trial_in_file_order(trials_run: Path):
    episodes = _lines(trials_run / "episodes.jsonl")
    order = [(r["controller"], r["episode"], r["trial"]) for r in episodes]
    expected = [(c, i, t) for c in ("pid", "threshold") for i in range(WORLDS) for t in range(1, 5)]
    assert order == expected
    steps = _lines(trials_run / "steps.jsonl")
    assert {(r["controller"], r["episode"], r["trial"]) for r in steps} == set(expected)


def test_pass_hat_k_matches_a_direct_count_of_the_episode_lines(trials_run: Path):
    worlds = _direct(_lines(trials_run / "episodes.jsonl"))
    summary = json.loads((trials_run / "summary.json").read_text())
    metrics = analyze(trials_run).controllers
    for name, by_world in worlds.items():
        assert sorted(by_world) == list(range(WORLDS))
        counts = [sum(s) for s in by_world.values()]
        assert all(len(s) == TRIALS for s in by_world.values())
        for k in range(1, TRIALS + 1):
            direct = sum(math.comb(c, k) / math.comb(TRIALS, k) for c in counts) / WORLDS
            assert summary[name]["pass_hat_k"][str(k)] == pytest.approx(direct, abs=1e-12)
            assert metrics[name].pass_k[k] == pytest.approx(direct, abs=1e-12)
        histogram = [counts.count(c) for c in range(TRIALS + 1)]
        assert summary[name]["worlds_by_successes"] == histogram
        assert metrics[name].world_successes == histogram
        assert metrics[name].worlds == WORLDS
        # the per-controller statistics count every episode-trial
        assert summary[name]["episodes"] == WORLDS * TRIALS
        assert summary[name]["success_rate"] == sum(counts) / (WORLDS * TRIALS)
    # a statistic that is not p^4: some world has mixed results (pass^4 > pass^1 ** 4 then)
    assert any(0 < c < TRIALS for by in worlds.values() for c in map(sum, by.values()))


def test_the_world_is_shared_across_trials_and_the_agent_is_not(trials_run: Path):
    steps = _lines(trials_run / "steps.jsonl")
    balances: dict[int, set[str]] = defaultdict(set)  # the points balance is drawn with the world
    actions: dict[tuple[str, int], dict[int, list[str | None]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for r in steps:
        if (r["result"] or "").startswith("points balance"):
            balances[r["episode"]].add(r["result"])
        actions[(r["controller"], r["episode"])][r["trial"]].append(r["action"])
    assert len(balances) >= WORLDS // 2
    assert all(len(seen) == 1 for seen in balances.values())  # one balance per world
    assert len({next(iter(seen)) for seen in balances.values()}) == len(balances)
    differ = [
        key for key, by_trial in actions.items() if len({tuple(a) for a in by_trial.values()}) > 1
    ]
    assert differ  # fresh agent streams: some world is played differently across trials


def test_trial_1_is_the_run_without_trials(trials_run: Path, tmp_path: Path):
    run_experiment(_spec(trials=1), tmp_path / "one")
    one = _lines(tmp_path / "one" / "episodes.jsonl")
    assert all("trial" not in r for r in one)
    first = [r for r in _lines(trials_run / "episodes.jsonl") if r.pop("trial") == 1]
    assert first == one


def test_a_run_killed_between_trials_resumes_to_the_same_bytes(trials_run: Path, tmp_path: Path):
    out = tmp_path / "killed"
    shutil.copytree(trials_run, out)
    (out / "summary.json").unlink()
    episodes = (out / "episodes.jsonl").read_text().splitlines(keepends=True)
    # killed after world 2's second trial of the first controller, halfway through a line
    (out / "episodes.jsonl").write_text("".join(episodes[:10]) + episodes[10][:25])
    assert resume_point(_spec(), out) == 2  # worlds 0 and 1 done; world 2 runs again whole
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2 * TRIALS
    steps = _lines(out / "steps.jsonl")
    assert {(r["episode"], r["trial"]) for r in steps} == {
        (i, t) for i in range(2) for t in range(1, 5)
    }
    run_experiment(_spec(), out, resume=True)
    for name in ("episodes.jsonl", "steps.jsonl", "summary.json"):
        assert (out / name).read_bytes() == (trials_run / name).read_bytes(), name


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"trials": 2, "reflexion": {"attempts": 3}},
            "spec: trials > 1 and reflexion.attempts > 1 cannot be combined",
        ),
        ({"trials": 0}, "spec: trials: must be at least 1, got 0"),
        ({"trials": 101}, "spec: trials: must be at most 100, got 101"),
    ],
)
def test_a_bad_trials_option_is_a_spec_error(changes: dict, message: str):
    with pytest.raises(SpecError) as err:
        validate_spec({"name": "x"} | changes)
    assert str(err.value).startswith(message)


def test_one_trial_per_world_reports_pass_hat_k_above_1_as_missing(tmp_path: Path):
    run_experiment(_spec(trials=1), tmp_path / "one")
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert "pass_hat_k" not in summary["pid"] and "worlds_by_successes" not in summary["pid"]
    m = analyze(tmp_path / "one").controllers["pid"]
    assert m.pass_k[1] == m.success.rate
    assert all(math.isnan(m.pass_k[k]) for k in (2, 4, 8))
