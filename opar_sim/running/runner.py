"""Run an experiment: chunks of episodes on an executor, streamed to a run directory.

Chunks may finish in any order; they are written in episode order, each
chunk's steps before its episode lines, and flushed at once, so the files are
identical whatever the executor, and an interrupted run keeps every finished
episode.  ``resume=True`` cuts a half-written tail and runs only what is
missing.  Memory does not grow with the number of episodes.  The files
themselves belong to ``opar_sim.rundir``; figures are drawn by
their callers (``opar_sim.figures``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import EpisodeResult
from opar_sim.measure.stats import Summary
from opar_sim.rundir import (
    SPEC_FILE,
    STEPS_PARQUET,
    SUMMARY_FILE,
    EpisodeTrace,
    Repair,
    RunWriter,
    episode_key,
    prepare_out_dir,
    resume_run,
    write_json,
    write_spec,
)
from opar_sim.rundir import write_summary as write_llm_summary
from opar_sim.rundir.columnar import (
    EPISODES_PARQUET,
    episode_columns,
    has_parquet,
    table_columns,
    table_step_arrays,
)
from opar_sim.rundir.columns import read_episode_rows
from opar_sim.rundir.traces import array_traces
from opar_sim.running.chunks import Chunk, ChunkResult, plan_chunks, run_chunk
from opar_sim.running.executors import SerialExecutor
from opar_sim.spec.build import build
from opar_sim.spec.schema import ExperimentSpec, SpecError

# a directory holding any of these is a run that ``--resume`` repairs and finishes
RESUMABLE_FILES = (SPEC_FILE, "episodes.jsonl", "steps.jsonl", "manifest.jsonl")
# what summary.json counts of each episodes.jsonl row (``Summary.add_row``, ``episode_key``)
SUMMARY_FIELDS = (
    *("controller", "episode", "trial", "attempt", "success", "steps", "tokens"),
    *("sim_seconds", "replans", "tool_calls", "outcome"),
)


@dataclass
class RunResult:
    """What a finished run wrote and its per-controller summary."""

    out: Path
    summary: dict[str, dict[str, Any]]
    resumed_from: int = 0  # episodes already on disk when the run started
    # with ``keep_traces``: the first trajectories of each controller, in file order (what
    # ``iter_traces`` would read back, without signals, actions and terms: the progress
    # figure draws none); None when they must be read from the files
    traces: dict[str, list[EpisodeTrace]] | None = None


def run_experiment(
    spec: ExperimentSpec,
    out: Path,
    *,
    executor: Executor | None = None,
    parallelism: int = 1,
    resume: bool = False,
    on_progress: Callable[[int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    engine: str = "simpy",
    keep_traces: int = 0,
) -> RunResult:
    """Run every episode of ``spec`` (every controller, same seeds) into ``out``.

    Args:
        spec: The validated spec.
        out: The run directory; spec.json, episodes.jsonl, steps.jsonl and
            summary.json are written there.
        executor: Where the chunks run (None: serially, in this process).
        parallelism: The executor's workers; sizes the chunks and bounds those in flight.
        resume: Continue the run already in ``out`` instead of starting afresh.
        on_progress: Called with the number of episodes each finished chunk adds.
        on_note: Called with each thing ``--resume`` repaired or cut.
        engine: ``"simpy"`` (the reference) or ``"batch"`` (``opar_sim.engines.batch``).
        keep_traces: Collect up to this many trajectories per controller as the
            episodes run (``RunResult.traces``, for ``run``'s figure), so nothing
            reads steps.jsonl back; 0 (the default) collects none.

    Returns:
        The run directory and its per-controller summary.
    """
    return run_many(
        [(spec, out)],
        executor=executor,
        parallelism=parallelism,
        resume=resume,
        on_progress=on_progress,
        on_note=on_note,
        engine=engine,
        keep_traces=keep_traces,
    )[0]


def run_many(
    runs: Sequence[tuple[ExperimentSpec, Path]],
    *,
    executor: Executor | None = None,
    parallelism: int = 1,
    resume: bool = False,
    on_progress: Callable[[int], None] | None = None,
    on_run: Callable[[int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    engine: str = "simpy",
    keep_traces: int = 0,
) -> list[RunResult]:
    """Run several experiments as one stream of chunks, each into its own directory.

    The executor stays busy across run boundaries (a sweep's points do not wait
    for each other); each run's files are still written in episode order.

    Args:
        runs: (spec, run directory) pairs, in the order they are written.
        executor: Where the chunks run (None: serially, in this process).
        parallelism: The executor's workers; sizes the chunks and bounds those in flight.
        resume: Continue runs already on disk; a run not started yet starts.
        on_progress: Called with the number of episodes each finished chunk adds.
        on_run: Called with a run's index when that run starts writing.
        on_note: Called with each thing ``--resume`` repaired or cut, per run.
        engine: ``"simpy"`` (the reference, on ``executor``) or ``"batch"`` (the
            lockstep engine, in this process; no ``resume``).
        keep_traces: Collect up to this many trajectories per controller of each
            run that starts afresh on the SimPy engine (``RunResult.traces``).

    Returns:
        One result per run, in the order of ``runs``.
    """
    for spec, _ in runs:
        build(spec)  # every error surfaces before anything is written
        if engine == "batch":  # imported here: a SimPy run does not load Numba (0.15 s)
            from opar_sim.engines.batch import check_batch

            check_batch(spec)
    if engine == "batch" and resume:
        raise SpecError("--engine batch: --resume is not supported (a batch run is rerun whole)")
    # resuming, a run not started yet simply starts (a sweep point the kill never reached)
    starts: list[Repair] = []
    for spec, out in runs:
        if resume and _started(out):
            found = resume_run(spec, out)
            for note in found.notes:
                if on_note is not None:
                    on_note(f"{out}: {note}")
        else:
            found = Repair()
            prepare_out_dir(out)
            out.mkdir(parents=True, exist_ok=True)
            write_spec(out, spec, engine)
        starts.append(found)
    done = [found.done for found in starts]
    already = sum(done)
    if on_progress is not None and already:
        on_progress(already)
    chunks: list[Chunk] = []
    owner: list[int] = []
    for index, ((spec, _), skip) in enumerate(zip(runs, done, strict=True)):
        wanted = keep_traces if skip == 0 and engine == "simpy" else 0
        planned = plan_chunks(spec, skip=skip, parallelism=parallelism, traces=wanted)
        chunks += planned
        owner += [index] * len(planned)
    writer = RunWriter(runs, on_run, starts, columnar=engine == "batch")
    if engine == "batch":
        done_runs = []
        try:
            for index, (spec, out) in enumerate(runs):
                traces, episodes = _run_batch(spec, index, writer, on_progress, keep_traces)
                done_runs.append(finish_run(spec, out, episodes=episodes))
                done_runs[-1].traces = traces
        finally:
            writer.close()
        return done_runs
    kept = [_Kept(keep_traces) if keep_traces and not skip else None for skip in done]
    try:
        stream = run_in_order(executor or SerialExecutor(), chunks, 2 * parallelism + 1)
        for index, result in zip(owner, stream, strict=True):
            c = result.chunk
            first = c.controller * runs[index][0].episodes
            units = (first + c.start, first + c.stop)
            writer.write(index, units, result.episodes, result.steps, result.calls)
            keeper = kept[index]
            if keeper is not None and c.traces:
                keeper.add(result.traces)
            if on_progress is not None:
                on_progress(result.chunk.stop - result.chunk.start)
    finally:
        writer.close()
    finished: list[RunResult] = []
    for (spec, out), skip, keeper in zip(runs, done, kept, strict=True):
        finished.append(finish_run(spec, out, resumed_from=skip))
        if keeper is not None:
            finished[-1].traces = keeper.traces(spec)
    return finished


def _run_batch(
    spec: ExperimentSpec,
    index: int,
    writer: RunWriter,
    on_progress: Callable[[int], None] | None,
    keep: int,
) -> tuple[dict[str, list[EpisodeTrace]] | None, list[Any]]:
    """Run ``spec`` on the batch engine: episodes.jsonl per controller, then the Parquet files.

    Returns:
        With ``keep``: each controller's first ``keep`` trajectories (from the step rows in
        memory, as ``iter_traces`` reads them back), else None; and the episodes.parquet
        tables written (a table per controller).
    """
    from opar_sim.engines.batch import episode_rows, run_batch, step_recorder

    n = spec.episodes
    steps = step_recorder(spec)
    tables: dict[str, list[Any]] = {STEPS_PARQUET: [], EPISODES_PARQUET: []}
    traces: dict[str, list[EpisodeTrace]] = {}
    for k, law in enumerate(spec.controller_list()):
        batch = run_batch(spec, k, 0, n, steps)
        lines, episodes = episode_rows(spec, k, 0, batch)
        writer.write(index, (k * n, (k + 1) * n), lines, "")
        del lines  # written: its memory is the step columns' next
        table = steps.step_table(spec, k)
        tables[STEPS_PARQUET].append(table)
        tables[EPISODES_PARQUET].append(episodes)
        if keep:  # the rows are in episode order: the first ``keep`` episodes' come first
            head = table.slice(0, int(batch.steps[:keep].sum()))
            traces[law.name] = list(array_traces(table_step_arrays(head, Path(STEPS_PARQUET))))
        if on_progress is not None:
            on_progress(n)
    writer.write_whole(index, tables)
    return (traces if keep else None), tables[EPISODES_PARQUET]


class _Kept:
    """The first ``limit`` trajectories of each controller of one run, as chunks arrive."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.by_controller: dict[str, list[EpisodeTrace]] | None = {}

    def add(self, traces: list[EpisodeTrace] | None) -> None:
        """Keep a chunk's trajectories (None: one would not read back the same)."""
        if traces is None:
            self.by_controller = None
        if self.by_controller is None or traces is None:
            return
        for trace in traces:
            mine = self.by_controller.setdefault(trace.controller, [])
            if len(mine) < self.limit:
                mine.append(trace)

    def traces(self, spec: ExperimentSpec) -> dict[str, list[EpisodeTrace]] | None:
        """What was kept, or None when the files must be read instead.

        Chunks starting at or past ``limit`` episodes send no trajectories: a
        controller short of ``limit`` in a larger run (episodes without steps) is
        completed from the files.
        """
        found = self.by_controller
        if found is None or spec.episodes <= self.limit:
            return found
        names = [c.name for c in spec.controller_list()]
        if len(found) < len(names) or any(len(v) < self.limit for v in found.values()):
            return None
        return found


def _started(out: Path) -> bool:
    """Whether ``out`` holds anything of a run (else ``--resume`` simply starts it)."""
    return out.is_dir() and any((out / name).exists() for name in RESUMABLE_FILES)


def finish_run(
    spec: ExperimentSpec,
    out: Path,
    *,
    resumed_from: int = 0,
    episodes: Sequence[Any] | None = None,
) -> RunResult:
    """Write summary.json (and llm.json for LLM runs) from the files on disk.

    Args:
        spec: The spec the run was made from.
        out: The run directory.
        resumed_from: Episodes that were already on disk when the run started.
        episodes: A batch run's episodes.parquet tables, just written (None: read the file).

    Returns:
        The run's directory and per-controller summary.
    """
    summary = Summary(trials=spec.trials)
    if episodes is not None:  # a batch run's rows, still in memory: added up at once
        summary.add_columns(table_columns(episodes, SUMMARY_FIELDS))
        return _summarized(out, summary)
    if has_parquet(out, EPISODES_PARQUET):  # a batch run: one row per episode, added up at once
        summary.add_columns(episode_columns(out, SUMMARY_FIELDS))
        return _summarized(out, summary)
    last: dict[str, Any] | None = None
    for row in read_episode_rows(out, SUMMARY_FIELDS):
        # with Reflexion attempts an episode seed has several rows, in attempt order;
        # the summary judges each seed (each trial of it) by its last attempt
        if last is not None and episode_key(last)[:3] != episode_key(row)[:3]:
            summary.add_row(last)
        last = row
    if last is not None:
        summary.add_row(last)
    return _summarized(out, summary, resumed_from)


def _summarized(out: Path, summary: Summary, resumed_from: int = 0) -> RunResult:
    table = summary.as_dict()
    write_json(out / SUMMARY_FILE, table)
    write_llm_summary(out)  # llm.json, for runs with an LLM agent
    return RunResult(out, table, resumed_from)


def run_in_order(executor: Executor, chunks: list[Chunk], in_flight: int) -> Iterator[ChunkResult]:
    """Run chunks on ``executor`` keeping at most ``in_flight`` pending; yield them in order."""
    pending: dict[Future[ChunkResult], int] = {}
    ready: dict[int, ChunkResult] = {}
    next_submit = next_yield = 0
    try:
        while next_yield < len(chunks):
            while next_submit < len(chunks) and len(pending) + len(ready) < in_flight:
                pending[executor.submit(run_chunk, chunks[next_submit])] = next_submit
                next_submit += 1
            if next_yield not in ready:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    ready[pending.pop(future)] = future.result()
                continue
            yield ready.pop(next_yield)
            next_yield += 1
    finally:
        for future in pending:
            future.cancel()


def simulate(
    spec: ExperimentSpec, episodes: int, seed: int, start: int = 0
) -> Iterator[EpisodeResult]:
    """The spec's first controller on ``episodes`` episodes of ``seed``, in memory, in order.

    No files and no executor: for analyses that read each step's record
    (``StepRecord``, with the hidden truth) rather than the lines on disk.
    Its guards, limits and guardrail are the spec's; one attempt, one trial.

    Args:
        spec: A validated spec.
        episodes: How many episodes.
        seed: Their base seed.
        start: The first episode's index (episodes start..start + episodes − 1).

    Yields:
        Each episode's result, with its steps.
    """
    parts = build(spec)
    task, agent = parts.make_task(), parts.make_agent()
    make = parts.controllers[0][1]
    for i in range(start, start + episodes):
        yield run_episode(
            task,
            agent,
            make(),
            parts.limits,
            episode_seed(seed, i),
            episode=i,
            supervisor=parts.make_supervisor(),
            guardrail=parts.guardrail,
        )
