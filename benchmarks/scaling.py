"""Wall time of a sweep on each executor, side by side, and byte-identical results.

Runs experiments/pid_gain_map.toml (or --spec) serially, on the local process
pool and on a local Dask cluster, then checks every point's episodes.jsonl and
steps.jsonl are identical across the three and prints the speed-ups.

    python benchmarks/scaling.py [--episodes 200] [--workers N]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import tempfile
import time
from pathlib import Path

from opar_sim.experiment.build import load_spec
from opar_sim.experiment.edit import with_overrides
from opar_sim.experiment.executors import ExecutorConfig, open_executor
from opar_sim.experiment.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]


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
