"""The batch engine on every task twin, and the wall time of a replicated shoot-out.

Two measurements of ``make bench`` (``suite.py`` prints them as rows):

- each twin's shipped spec with the PID on the batch engine in-process:
  controller-steps (Reflects) per CPU second, rows not serialised (``rates``);
- ``opar-sim shootout SPEC --engine batch --replicates 5`` in a fresh interpreter:
  every law tuned 5 times, its trials screened on the batch engine and its finalists
  and held-out episodes on the SimPy engine, on every core (``shootout``): the wall
  seconds (a user's wait) and the CPU seconds of the process and its workers.

    python benchmarks/twins.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from opar_sim.engines.batch import run_batch
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = ROOT / "experiments"
# each twin's spec (a spec of trials runs one trial: the batch engine does not model trials)
TWIN_SPECS = {
    "flight_booking": "flight_booking.toml",
    "research_qa_faults": "research_qa_faults.toml",
    "research_qa (delay, noise)": "detectors_research_qa.toml",
    "weather": "weather.toml",
    "tool_chain (τ-bench model)": "tau_airline_model.toml",
}
SHOOTOUT_SPECS = ("flight_booking.toml", "research_qa_faults.toml")
QUICK_SHOOTOUT = (
    "--replicates",
    "2",
    "--controllers",
    "pid,threshold",
    "--trials-per-dim",
    "1",
    "--train-episodes",
    "20",
    "--holdout-episodes",
    "20",
    "--finalists",
    "1",
)


def rate(spec_file: str, episodes: int) -> float:
    """Controller-steps per CPU second of the batch engine on ``spec_file`` with the PID."""
    spec = with_overrides(load_spec(EXPERIMENTS / spec_file), controller="pid", trials=1)
    run_batch(spec, 0, 0, min(episodes, 500))  # warm: imports, first allocations
    start = time.process_time()
    result = run_batch(spec, 0, 0, episodes)
    return int(result.steps.sum()) / (time.process_time() - start)


def rates(episodes: int) -> dict[str, float]:
    """``rate`` of every twin's spec."""
    return {task: rate(spec, episodes) for task, spec in TWIN_SPECS.items()}


def shootout(spec_file: str, quick: bool) -> dict[str, float]:
    """Wall and CPU seconds of a 5-replicate batch-screened shoot-out in a fresh interpreter.

    Args:
        spec_file: The experiment spec's file name.
        quick: Tiny sizes (the smoke test): the numbers mean nothing.

    Returns:
        ``wall_s``, ``cpu_s`` (the process and its workers) and ``cpus``.
    """
    with tempfile.TemporaryDirectory(prefix="opar-shootout-") as tmp:
        argv = [sys.executable, "-m", "opar_sim.cli", "shootout", str(EXPERIMENTS / spec_file)]
        argv += ["--engine", "batch", "--out", str(Path(tmp) / "out")]
        argv += QUICK_SHOOTOUT if quick else ("--replicates", "5")
        before = os.times()
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        after = os.times()
    if done.returncode != 0:
        raise RuntimeError(f"shootout failed: {done.stderr.strip()[-500:]}")
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return {"wall_s": wall, "cpu_s": cpu, "cpus": float(os.cpu_count() or 1)}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the twins' rates and the shoot-outs' times."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    args = parser.parse_args(argv)
    for task, value in rates(2_000 if args.quick else 100_000).items():
        print(f"{task}: {value:,.0f} controller-steps per CPU second")
    for spec in SHOOTOUT_SPECS:
        t = shootout(spec, args.quick)
        print(f"shootout {spec}: {t['wall_s']:.0f} s wall, {t['cpu_s']:.0f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
