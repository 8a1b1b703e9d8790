"""Trace laws replayed on recorded runs: counted by hand from the raw file, and on toy runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from opar_sim.cli.main import main
from opar_sim.measure.group_bootstrap import group_resample_counts, ratio_estimates
from opar_sim.spec.schema import SpecError
from opar_sim.traces import import_traces
from opar_sim.traces.advise import cap_table, restart_success, restarts, smallest_cap
from opar_sim.traces.stopping import RunCost, evaluate, load_costs, parse_law, parse_laws
from tests.tau_bench_data import tau_bench_file


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    return json.loads(tau_bench_file().read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tau") / "run"
    import_traces(tau_bench_file(), "tau-bench", out)
    return out


def _calls(run: dict) -> list[tuple[str, str]]:
    """The run's tool calls in order, as (name, canonical arguments)."""
    out = []
    for m in run["traj"]:
        for c in m.get("tool_calls") or []:
            args = json.dumps(json.loads(c["function"]["arguments"] or "{}"), sort_keys=True)
            out.append((c["function"]["name"], args))
    return out


def test_cap_of_ten_calls_counted_by_hand(raw: list[dict], imported: Path) -> None:
    # kept: successes with at most 10 tool calls; saved: calls beyond the 10th on failures
    wins = [len(_calls(r)) for r in raw if r["reward"] == 1.0]
    losses = [len(_calls(r)) for r in raw if r["reward"] != 1.0]
    kept = sum(n <= 10 for n in wins)
    saved = sum(max(0, n - 10) for n in losses) / sum(losses)
    (result,) = evaluate(load_costs(imported), [parse_law("calls:10")])
    assert (result.successes, result.kept) == (63, kept) == (63, 58)
    assert result.calls_saved.mean == pytest.approx(saved, abs=1e-12)
    assert result.kept_share.low <= result.kept_share.mean <= result.kept_share.high


def test_second_identical_call_counted_by_hand(raw: list[dict], imported: Path) -> None:
    # a success is lost when its first repeated identical call comes before its last call
    lost = 0
    for r in raw:
        if r["reward"] != 1.0:
            continue
        calls = _calls(r)
        first_repeat = next((k for k, c in enumerate(calls) if c in calls[:k]), None)
        lost += first_repeat is not None and first_repeat < len(calls) - 1
    (result,) = evaluate(load_costs(imported), [parse_law("repeat:2")])
    assert result.successes - result.kept == lost == 2


def test_first_tool_error_counted_by_hand(raw: list[dict], imported: Path) -> None:
    # τ-bench makes one call per turn and answers it with the next tool message: a success
    # is lost when its first error reply answers a call before its last call
    lost = 0
    for r in raw:
        if r["reward"] != 1.0:
            continue
        replies = [m["content"] or "" for m in r["traj"] if m["role"] == "tool"]
        first = next((k for k, c in enumerate(replies) if c.startswith("Error")), None)
        lost += first is not None and first < len(_calls(r)) - 1
    (result,) = evaluate(load_costs(imported), [parse_law("errors:1")])
    assert result.successes - result.kept == lost == 4


def test_combination_stops_at_the_first_part(imported: Path) -> None:
    runs = load_costs(imported)
    a, b, both = (parse_law(t) for t in ("calls:12", "errors:2", "calls:12+errors:2"))
    assert all(both.stop(r) == min(a.stop(r), b.stop(r)) for r in runs)
    results = evaluate(runs, [a, b, both])
    assert results[2].kept == min(results[0].kept, results[1].kept) == 62


def _run(task: int, success: bool, calls: list[int], errors: list[int] | None = None) -> RunCost:
    n = len(calls)
    counts = {
        "steps": np.arange(1, n + 1),
        "calls": np.cumsum(calls),
        "tokens": np.cumsum([10] * n),
        "errors": np.cumsum(errors or [0] * n),
        "repeat": np.zeros(n, int),
        "transfer": np.zeros(n, int),
    }
    decided = max((k + 1 for k, c in enumerate(calls) if c), default=0)
    return RunCost(task, 1, success, decided, counts)


def test_toy_runs_exact_values() -> None:
    # task 0: a success deciding at turn 3 (its last call), then one turn of talk;
    # task 1: a failure of 5 turns with a call each, its 2nd call answering an error
    runs = [_run(0, True, [1, 1, 1, 0]), _run(1, False, [1, 1, 1, 1, 1], [0, 1, 0, 0, 0])]
    cap2, cap3, err1 = evaluate(runs, parse_laws("calls:2,calls:3,errors:1"), resamples=200)
    assert (cap2.kept, cap3.kept, err1.kept) == (0, 1, 1)
    assert cap2.calls_saved.mean == 3 / 5 and cap3.calls_saved.mean == 2 / 5
    assert err1.turns_saved.mean == 3 / 5 and err1.fired == 1
    rows = cap_table(runs, "calls", resamples=200)
    assert [r.success_rate.mean for r in rows] == [0.0, 0.0, 0.5, 0.5, 0.5]
    assert smallest_cap(rows, 0.99).cap == 3  # type: ignore[union-attr]


def test_restart_recursion_by_hand() -> None:
    # trials of one task as (success, decided_at, turns): a quick success and a long failure
    trials = np.array([[1, 2, 2], [0, 0, 10]], float)
    # budget 6, cutoff 3: each attempt succeeds w.p. 1/2 and otherwise is killed at 3;
    # the second attempt has 3 turns left: P = 1/2 + 1/2 * 1/2
    assert restart_success(trials, 3, 6) == 0.75
    assert restart_success(trials, 6, 6) == 0.5  # continuing: one attempt
    # a success that ends by itself past the cutoff is cut: restarting then loses it
    late = np.array([[1, 8, 9]], float)
    assert restart_success(late, 4, 12) == 0.0 and restart_success(late, 12, 12) == 1.0


def test_restart_study_on_the_record(imported: Path) -> None:
    study = restarts(load_costs(imported))
    assert study.budget == 30 and not study.pooled and study.tasks == 35
    assert study.continuing.mean == pytest.approx(0.45)
    assert all(r.success.mean <= study.continuing.mean + 1e-12 for r in study.rows)
    assert study.verdict().startswith("continuing is best")


def test_ratio_bootstrap_keeps_groups_together() -> None:
    counts = group_resample_counts(3, np.random.default_rng(1), 500)
    assert (counts.sum(axis=1) == 3).all()
    num, den = np.array([[1.0], [0.0], [2.0]]), np.array([[2.0], [2.0], [2.0]])
    (e,) = ratio_estimates(num, den, counts)
    assert e.mean == 0.5 and 0.0 <= e.low < 0.5 < e.high <= 1.0


def test_bad_laws_and_cli(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("calls", "nope:3", "calls:0", "repeat:x", ""):
        with pytest.raises(SpecError):
            parse_laws(text)
    assert parse_law("transfer").name == "transfer:1"
    assert main(["replay", str(imported), "--laws", "calls:8,calls:10,calls:12,calls:15"]) == 0
    out = capsys.readouterr().out
    assert "calls:10" in out and "58/63" in out and "cannot run on trace signals" in out
    assert (imported / "frontier.png").is_file() and (imported / "replay_laws.json").is_file()
    assert main(["replay", str(imported), "--laws", "steps:x"]) == 2
    assert main(["advise", str(imported), "--share", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "the smallest caps keeping 90% of the recorded successes" in out
    assert len(out.splitlines()) <= 8 and "restarts: " in out and "--detail" in out
    assert main(["advise", str(imported), "--share", "0.9", "--detail"]) == 0
    assert "smallest caps keeping 90%" in capsys.readouterr().out
    assert main(["advise", str(imported), "--share", "2"]) == 2
