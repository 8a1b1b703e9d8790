"""advise's predicted success at each step cap against a real sweep of ``limits.max_steps``.

A step cap only cuts a recorded prefix, so on a simulated run the prediction at cap S is
the success rate a run with ``max_steps = S`` would have on the same seeds.  Two checks:

- the same seeds: at a few caps the real capped run has exactly the predicted successes
  (common random numbers: the capped run is the recorded prefix);
- independent seeds (the fair check of the claim): for every cap from 5 to 30 the
  prediction from one run (300 episodes, seed 0) and the success of a real sweep point
  (100 episodes each, seed 7_000) differ by no more than two independent samples of those
  sizes may, at the 95 % level corrected for the 26 caps (Bonferroni, z ≈ 3.1).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from scipy.stats import norm

from opar_sim.rundir import read_jsonl
from opar_sim.running.runner import run_experiment, run_many
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from opar_sim.traces.advise import cap_table
from opar_sim.traces.stopping import load_costs
from tests.conftest import SPEC

# long enough that no run stops on time or tokens before 40 steps
LIMITS = {"limits.max_steps": 40, "limits.token_budget": 10**8, "limits.time_budget": 10**6}
CAPS = range(5, 31)
BASE, SWEEP = 300, 100


def _spec(**changes: object) -> object:
    return apply_changes(load_spec(SPEC), LIMITS | changes, "test")


@pytest.fixture(scope="module")
def predicted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, float]]:
    out = tmp_path_factory.mktemp("advise") / "base"
    run_experiment(_spec(episodes=BASE, seed=0), out)  # type: ignore[arg-type]
    rows = cap_table(load_costs(out), "steps", list(CAPS), resamples=200)
    return out, {r.cap: r.success_rate.mean for r in rows}


def test_same_seeds_give_exactly_the_prediction(
    predicted: tuple[Path, dict[int, float]], tmp_path: Path
) -> None:
    base, _ = predicted
    first = list(read_jsonl(base / "episodes.jsonl"))[:50]
    for cap in (8, 13, 21):
        out = tmp_path / f"cap{cap}"
        result = run_experiment(_spec(episodes=50, seed=0, **{"limits.max_steps": cap}), out)  # type: ignore[arg-type]
        expected = sum(e["success"] and e["steps"] <= cap for e in first)
        assert result.summary["pid"]["success_rate"] * 50 == expected


@pytest.mark.slow
def test_prediction_within_the_sampling_interval_of_a_sweep(
    predicted: tuple[Path, dict[int, float]], tmp_path: Path
) -> None:
    _, prediction = predicted
    runs = [
        (_spec(episodes=SWEEP, seed=7_000, **{"limits.max_steps": cap}), tmp_path / f"s{cap}")
        for cap in CAPS
    ]
    results = run_many(runs)  # type: ignore[arg-type]
    z = norm.ppf(1 - 0.05 / (2 * len(CAPS)))
    misses = []
    for cap, result in zip(CAPS, results, strict=True):
        observed = result.summary["pid"]["success_rate"]
        p = prediction[cap]
        pooled = (p * BASE + observed * SWEEP) / (BASE + SWEEP)
        half = z * math.sqrt(pooled * (1 - pooled) * (1 / BASE + 1 / SWEEP))
        if abs(p - observed) > half:
            misses.append((cap, p, observed, half))
    assert not misses
    # the check has teeth: the prediction moves over the caps far more than the interval
    assert prediction[30] - prediction[5] > 0.5
