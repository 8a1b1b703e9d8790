"""The benchmark suite of ``make bench``: one table, every figure measured in this run.

CPU time (``time.process_time``; a child's from ``resource``), the median of
``--repeats`` runs, so the ratios hold on a loaded machine where wall time
does not:

* the floor: a bare SimPy loop, four timeouts and a PID update per step;
* the SimPy engine in-process: ``run_episode`` on flight_booking with the
  PID, each episode's rows serialised (``episode_lines``);
* the batch engine: ``run_batch`` on the same spec, in controller-steps
  (Reflects) per second per core (target >= 1,000,000);
* ``opar-sim --help``: the CPU time of a fresh interpreter running it, and
  the heavy modules it imports (none is the target).

Writes ``benchmarks/results.json`` (or ``--out``).

    python benchmarks/suite.py [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import simpy

import controllers
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.experiment.batch import run_batch
from opar_sim.experiment.build import build, load_spec
from opar_sim.experiment.edit import with_overrides
from opar_sim.experiment.rundir import episode_lines

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "flight_booking.toml"
HEAVY = ("matplotlib", "ollama", "llama_cpp", "dask", "distributed", "optuna")


def floor(steps: int) -> float:
    """CPU seconds per step of a bare SimPy loop: four timeouts and a PID update."""
    pid = controllers.CognitivePID(1.0, 0.1, 2.0)

    def loop(env: simpy.Environment) -> simpy.events.ProcessGenerator:
        error = 1.0
        for _ in range(steps):
            for _phase in range(4):
                yield env.timeout(1.0)
            error *= 0.9
            pid.update(error, 4.0)

    env = simpy.Environment()
    env.process(loop(env))
    start = time.process_time()
    env.run()
    return (time.process_time() - start) / steps


def simpy_engine(episodes: int) -> float:
    """CPU seconds per loop step of the SimPy engine, records serialised."""
    spec = with_overrides(load_spec(SPEC), controller="pid")
    parts = build(spec)
    task, agent, law = parts.make_task(), parts.make_agent(), parts.controllers[0][1]()
    steps = 0
    start = time.process_time()
    for i in range(episodes):
        result = run_episode(task, agent, law, parts.limits, episode_seed(spec.seed, i), episode=i)
        episode_lines(result)
        steps += len(result.steps)
    return (time.process_time() - start) / steps


def batch_engine(episodes: int) -> float:
    """CPU seconds per controller-step of the batch engine (rows not serialised)."""
    spec = with_overrides(load_spec(SPEC), controller="pid")
    start = time.process_time()
    result = run_batch(spec, 0, 0, episodes)
    return (time.process_time() - start) / int(result.steps.sum())


def child_cpu(argv: Sequence[str]) -> float:
    """CPU seconds (user + system) a child process spends running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, capture_output=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def help_imports() -> list[str]:
    """The heavy modules ``opar-sim --help`` leaves in ``sys.modules``."""
    code = (
        "import sys, contextlib, io\n"
        "from opar_sim.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(['--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return [m for m in out.stdout.strip().split(",") if m]


def median(measure: Callable[[], float], repeats: int) -> float:
    """The median of ``repeats`` measurements."""
    return statistics.median(measure() for _ in range(repeats))


def run(quick: bool, repeats: int) -> dict[str, float | int | list[str]]:
    """Measure every figure of the suite, side by side in this run.

    Args:
        quick: Tiny sizes (the smoke test): the numbers mean nothing.
        repeats: Repeats per measurement (the median is kept).

    Returns:
        The figures, as written to results.json.
    """
    floor_steps, simpy_episodes, batch_episodes = (
        (2_000, 20, 500) if quick else (50_000, 1_000, 100_000)
    )
    floor_s = median(lambda: floor(floor_steps), repeats)
    simpy_s = median(lambda: simpy_engine(simpy_episodes), repeats)
    batch_s = median(lambda: batch_engine(batch_episodes), repeats)
    help_s = median(
        lambda: child_cpu([sys.executable, "-m", "opar_sim.cli", "--help"]), max(1, repeats)
    )
    return {
        "repeats": repeats,
        "floor_us_per_step": floor_s * 1e6,
        "simpy_us_per_step": simpy_s * 1e6,
        "simpy_over_floor": simpy_s / floor_s,
        "batch_episodes": batch_episodes,
        "batch_us_per_step": batch_s * 1e6,
        "batch_steps_per_cpu_second": 1.0 / batch_s,
        "batch_speedup_over_simpy": simpy_s / batch_s,
        "help_cpu_seconds": help_s,
        "help_heavy_imports": help_imports(),
    }


def table(results: dict[str, float | int | list[str]]) -> str:
    """The one table ``make bench`` prints."""
    r = results
    heavy = ", ".join(r["help_heavy_imports"]) or "none"  # type: ignore[arg-type]
    rows = [
        ("bare SimPy floor (4 timeouts + PID)", f"{r['floor_us_per_step']:.2f} µs/step", "1×"),
        (
            "SimPy engine in-process (run_episode + rows)",
            f"{r['simpy_us_per_step']:.1f} µs/step",
            f"{r['simpy_over_floor']:.1f}× the floor",
        ),
        (
            f"batch engine, {r['batch_episodes']:,} episodes (PID)",
            f"{r['batch_us_per_step']:.3f} µs/step",
            f"{r['batch_steps_per_cpu_second']:,.0f} controller-steps/s/core; "
            f"{r['batch_speedup_over_simpy']:.0f}× the SimPy engine",
        ),
        (
            "opar-sim --help",
            f"{r['help_cpu_seconds']:.2f} s CPU",
            f"heavy imports: {heavy}",
        ),
    ]
    width = [max(len(row[k]) for row in rows) for k in range(3)]
    head = ("measurement", "CPU time", "ratio / note")
    width = [max(w, len(h)) for w, h in zip(width, head, strict=True)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(head, width, strict=True))]
    lines.append("-+-".join("-" * w for w in width))
    lines += [" | ".join(c.ljust(w) for c, w in zip(row, width, strict=True)) for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite, print its table and write results.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="default: 5 (1 with --quick)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results.json")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 5)
    results = run(args.quick, repeats)
    print(table(results))
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
