"""Executors side by side: a sweep's wall time and byte-identical results; a run's speed.

``main`` runs experiments/pid_gain_map.toml (or --spec) serially, on the local
process pool and on a local Dask cluster, then checks every point's
episodes.jsonl and steps.jsonl are identical across the three and prints the
speed-ups.  ``throughput`` (used by ``suite.py``) runs the default spec with the
PID on one executor and returns its wall and CPU time (this process and its
workers), for the pool's efficiency: episodes per second with 2 workers over 1.

    python benchmarks/scaling.py [--episodes 200] [--workers N]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import run_experiment
from opar_sim.running.sweep import run_sweep
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides

ROOT = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def throughput(config: ExecutorConfig, episodes: int) -> tuple[float, float]:
    """Run ``episodes`` of flight_booking with the PID on ``config``: (wall s, CPU s).

    The CPU time is this process's and its workers' (reaped when the executor
    shuts down); both include the executor's start-up and shutdown.  One
    ``process`` worker is the serial executor, as in ``opar-sim run --workers 1``.
    """
    spec = with_overrides(
        load_spec(ROOT / "experiments" / "flight_booking.toml"), episodes=episodes, controller="pid"
    )
    with tempfile.TemporaryDirectory(prefix="opar-throughput-") as tmp:
        wall, cpu = time.perf_counter(), time.process_time() + _children_cpu()
        with open_executor(config) as executor:
            run_experiment(
                spec, Path(tmp) / "run", executor=executor, parallelism=config.parallelism
            )
        return time.perf_counter() - wall, time.process_time() + _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "experiments" / "pid_gain_map.toml"))
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    spec = with_overrides(load_spec(args.spec), episodes=args.episodes)
    work = Path(tempfile.mkdtemp(prefix="opar-scaling-"))
    configs = {
        "serial": ExecutorConfig("serial"),
        "process": ExecutorConfig("process", args.workers),
        "dask-local": ExecutorConfig("dask", args.workers),
    }
    times: dict[str, float] = {}
    for name, config in configs.items():
        start = time.perf_counter()
        with open_executor(config) as executor:
            run_sweep(spec, work / name, executor=executor, parallelism=config.parallelism)
        times[name] = time.perf_counter() - start
        print(f"{name:>10}: {times[name]:7.1f} s wall")
    same = all(
        filecmp.cmp(
            work / "serial" / p.parent.name / p.name,
            work / other / p.parent.name / p.name,
            shallow=False,
        )
        for p in (work / "serial").glob("*/*.jsonl")
        for other in ("process", "dask-local")
    )
    print(f"episodes.jsonl and steps.jsonl identical on all executors: {same}")
    for name in ("process", "dask-local"):
        print(
            f"speed-up of {name} over serial with {args.workers} workers: "
            f"{times['serial'] / times[name]:.2f}x"
        )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
