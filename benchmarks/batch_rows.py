"""The batch engine's CLI path end to end, rows written: steps per CPU second, and its parts.

``cli_batch`` runs ``opar-sim run --engine batch`` (the default spec, the PID) at two sizes
in fresh interpreters and differences their CPU time (this cancels the start-up and the
progress figure, drawn from 2,000 episodes in both): what is left is the engine, the step
recording, the outcome and answer codes, the episode lines, the Parquet files, the summary
and the figure's reading of the steps, per step.  ``breakdown`` times those parts in this process.

    python benchmarks/batch_rows.py [SMALL LARGE]
"""

from __future__ import annotations

import io
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import memory
import pyarrow.parquet as pq

from opar_sim.engines.batch import episode_table, run_batch, step_recorder
from opar_sim.engines.batch.coding import answer_codes, outcome_codes
from opar_sim.engines.batch.lines import line_blocks
from opar_sim.measure.stats import Summary
from opar_sim.rundir.columnar import EPISODES_PARQUET, encode, table_columns
from opar_sim.running.runner import SUMMARY_FIELDS
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import with_overrides

FULL = (2_000, 100_000)
QUICK = (5, 2_000)  # the smoke test's: the difference is noise, the path is exercised
WARM = 200  # episodes of the warm-up run of ``breakdown``


def steps_of(out: Path) -> int:
    """The loop steps of a batch run directory, from its episodes.parquet."""
    return int(pq.read_table(out / EPISODES_PARQUET, columns=["steps"])["steps"].to_numpy().sum())


def cli_batch(sizes: tuple[int, int], work: Path, pairs: int = 1) -> dict[str, Any]:
    """CPU seconds per step of ``run --engine batch``, start-up cancelled by differencing.

    A first tiny run compiles the row loops where the cache lacks them (seconds, once per
    machine), so no measured run pays for it.  With ``pairs`` > 1 the two sizes run that
    many times, alternating, and the figure is the median pair's (one pair's difference
    moved by a third between two benches): ``runs`` holds every pair's.
    """
    memory.cli_run(5, work / "batch-cli-warm", "--engine", "batch")
    usages, steps, runs = [], [], []
    for pair in range(pairs):
        usage = []
        for n in sizes:
            out = work / f"batch-cli-{n}-{pair}"
            usage.append(memory.cli_run(n, out, "--engine", "batch").cpu_seconds)
            if not pair:
                steps.append(steps_of(out))
            shutil.rmtree(out)  # a 100,000-episode run is 120 MB
        usages.append(usage)
        runs.append((usage[1] - usage[0]) / (steps[1] - steps[0]))
    per_step = statistics.median(runs)
    return {
        "episodes": list(sizes),
        "cpu_seconds": usages,  # each pair's, small run first
        "steps": steps,
        "us_per_step": per_step * 1e6,
        "steps_per_cpu_second": 1 / per_step if per_step > 0 else float("nan"),
        "runs": [1 / r if r > 0 else float("nan") for r in runs],
    }


def breakdown(episodes: int, work: Path) -> dict[str, float]:
    """CPU µs per step of the parts of a batch run's rows, in this process.

    As ``runner._run_batch``: the outcomes and answers coded once for the lines and the
    table, the summary from the table in memory.  Timed warm: a small run goes through
    every part first (compiled kernels loaded, as differencing the CLI's sizes cancels
    their loading).
    """
    if episodes > WARM:
        breakdown(WARM, work)
    spec = with_overrides(load_spec(memory.SPEC), episodes=episodes, controller="pid")
    clock = time.process_time
    start = clock()
    plain = run_batch(spec, 0, 0, episodes)
    engine = clock() - start
    recorder = step_recorder(spec)
    start = clock()
    result = run_batch(spec, 0, 0, episodes, recorder)
    recorded = clock() - start
    start = clock()
    table = recorder.step_table(spec, 0)
    columns = clock() - start
    start = clock()
    steps_sink = io.BytesIO()
    encode([table], steps_sink)
    parquet = clock() - start
    start = clock()
    made = (outcome_codes(result), answer_codes(result))
    codes = clock() - start
    start = clock()
    lines = sum(len(block) for block in line_blocks(spec, 0, 0, result, made))
    text = clock() - start
    start = clock()
    episodes = episode_table(spec, 0, 0, result, made)
    with open(work / EPISODES_PARQUET, "wb") as f:
        encode([episodes], f)
    episodes_parquet = clock() - start
    start = clock()
    Summary().add_columns(table_columns([episodes], SUMMARY_FIELDS))
    summary = clock() - start
    n = int(plain.steps.sum())
    return {
        "steps": n,
        "engine": engine / n * 1e6,
        "recording": (recorded - engine) / n * 1e6,
        "step_columns": columns / n * 1e6,
        "steps_parquet": parquet / n * 1e6,
        "episode_codes": codes / n * 1e6,
        "episode_lines": text / n * 1e6,
        "episodes_parquet": episodes_parquet / n * 1e6,
        "summary": summary / n * 1e6,
        "steps_parquet_mb": steps_sink.tell() / 1e6,
        "episode_lines_mb": lines / 1e6,
    }


def main(argv: list[str]) -> None:
    """Print the end-to-end figure and the in-process parts."""
    sizes = (int(argv[0]), int(argv[1])) if len(argv) == 2 else FULL
    with tempfile.TemporaryDirectory(prefix="opar-batch-rows-") as tmp:
        found = cli_batch(sizes, Path(tmp))
        parts = breakdown(sizes[1], Path(tmp))
    print(
        f"run --engine batch, {sizes[0]:,} vs {sizes[1]:,} episodes: "
        f"{found['steps_per_cpu_second']:,.0f} steps per CPU second "
        f"({found['us_per_step']:.3f} µs/step)"
    )
    for name, value in parts.items():
        print(f"  {name}: {value:,.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
