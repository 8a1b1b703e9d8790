"""``traces compare``: an imported record and a run recorded by opar-sim, side by side."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from opar_sim.cli.main import main
from opar_sim.measure.pass_k import pass_hat_k
from opar_sim.rundir import read_jsonl
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from opar_sim.traces import import_traces
from opar_sim.traces.compare import profile
from opar_sim.traces.stopping import parse_laws
from tests.conftest import EXPERIMENTS
from tests.tau_bench_data import tau_bench_file


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run recorded by opar-sim, read as it is (no import): 12 worlds x 4 trials."""
    spec = apply_changes(
        load_spec(EXPERIMENTS / "flight_booking_trials.toml"), {"episodes": 12}, "test"
    )
    out = tmp_path_factory.mktemp("sim") / "run"
    run_experiment(spec, out)
    return out


def test_a_simulated_run_is_profiled_from_its_own_files(simulated: Path) -> None:
    p = profile(simulated, parse_laws("steps:1000"))
    episodes = list(read_jsonl(simulated / "episodes.jsonl"))
    attempts: dict[int, list[bool]] = {}
    for e in episodes:
        attempts.setdefault(e["episode"], []).append(bool(e["success"]))
    assert (p.runs, p.tasks) == (48, 12)
    assert p.pass_k == pytest.approx([pass_hat_k(attempts, k) for k in range(1, 5)])
    wins = [e["tool_calls"] for e in episodes if e["success"]]
    losses = [e["tool_calls"] for e in episodes if not e["success"]]
    assert p.success_rate == pytest.approx(len(wins) / 48)
    assert p.calls_success == pytest.approx(np.mean(wins) if wins else math.nan, nan_ok=True)
    assert p.calls_failure == pytest.approx(np.mean(losses) if losses else math.nan, nan_ok=True)
    assert p.turns_success == pytest.approx(
        np.mean([e["steps"] for e in episodes if e["success"]]) if wins else math.nan, nan_ok=True
    )
    # a law that never fires keeps every success and saves nothing
    assert p.laws[0].kept == len(wins) and p.laws[0].calls_saved.mean == 0.0


def test_compare_prints_both_columns(simulated: Path, tmp_path: Path, capsys) -> None:
    imported = tmp_path / "tau"
    import_traces(tau_bench_file(), "tau-bench", imported)
    tau = profile(imported, parse_laws("calls:12,repeat:2"))
    # the τ-bench README's figures; calls:12 keeps all 63 successes
    assert [round(v, 3) for v in tau.pass_k] == [0.45, 0.295, 0.229, 0.2]
    assert round(tau.calls_success, 2) == 4.14 and round(tau.calls_failure, 2) == 6.94
    assert tau.laws[0].kept == tau.laws[0].successes == 63
    assert main(["traces", "compare", str(imported), str(simulated)]) == 0
    out = capsys.readouterr().out
    assert "gpt-4o" in out and "pass^4" in out and "runs repeating an identical call" in out
    assert "…" not in out  # fitted to 100 columns, nothing cut
