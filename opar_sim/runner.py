"""Run an experiment: chunks of episodes on an executor, streamed to a run directory.

A run directory holds the resolved spec (``spec.json``), ``episodes.jsonl``
(one line per episode), ``steps.jsonl`` (one line per step), ``summary.json``
and figures.  Chunks may finish in any order; they are written in episode
order, each chunk's steps before its episode lines, and flushed at once, so
the files are identical whatever the executor, and an interrupted run keeps
every finished episode.  ``resume=True`` cuts a half-written tail and runs
only what is missing.  Memory does not grow with the number of episodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from opar_sim import memory_plots, plots
from opar_sim.executors import SerialExecutor
from opar_sim.llm.trace import CALLS_FILE
from opar_sim.llm.trace import write_summary as write_llm_summary
from opar_sim.reflexion import success_by_attempt
from opar_sim.spec import ExperimentSpec, SpecError, build
from opar_sim.summary import Summary
from opar_sim.work import Chunk, ChunkResult, plan_chunks, run_chunk

RUN_FILES = ("spec.json", "episodes.jsonl", "steps.jsonl", "summary.json")
FIGURE_EPISODES = 2000  # episodes per controller drawn in the convergence figure


@dataclass
class RunResult:
    """What a finished run wrote and its per-controller summary."""

    out: Path
    summary: dict[str, dict[str, Any]]
    figures: list[str] = field(default_factory=list)
    resumed_from: int = 0  # episodes already on disk when the run started


def prepare_out_dir(out: Path) -> None:
    """Refuse to overwrite a run: an existing directory must hold no run files."""
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if out.is_dir() and any((out / name).exists() for name in RUN_FILES):
        raise SpecError(
            f"--out {out} already holds a run; use --resume to finish it, or another directory"
        )


def run_experiment(
    spec: ExperimentSpec,
    out: Path,
    *,
    executor: Executor | None = None,
    parallelism: int = 1,
    resume: bool = False,
    on_progress: Callable[[int], None] | None = None,
    figures: bool = True,
) -> RunResult:
    """Run every episode of ``spec`` (every controller, same seeds) into ``out``."""
    if resume and not (out / "spec.json").is_file():
        raise SpecError(f"--resume: {out} holds no run to resume")
    return run_many(
        [(spec, out)],
        executor=executor,
        parallelism=parallelism,
        resume=resume,
        on_progress=on_progress,
        figures=figures,
    )[0]


def run_many(
    runs: Sequence[tuple[ExperimentSpec, Path]],
    *,
    executor: Executor | None = None,
    parallelism: int = 1,
    resume: bool = False,
    on_progress: Callable[[int], None] | None = None,
    on_run: Callable[[int], None] | None = None,
    figures: bool = True,
) -> list[RunResult]:
    """Run several experiments as one stream of chunks, each into its own directory.

    The executor stays busy across run boundaries (a sweep's points do not wait
    for each other); each run's files are still written in episode order.
    ``on_run(i)`` is called when run ``i`` starts writing.
    """
    for spec, _ in runs:
        build(spec)  # every error surfaces before anything is written
    # resuming, a run not started yet simply starts (a sweep point the kill never reached)
    done: list[int] = [
        _resume_point(spec, out) if resume and (out / "spec.json").is_file() else 0
        for spec, out in runs
    ]
    for spec, out in runs:
        if not (resume and (out / "spec.json").is_file()):
            prepare_out_dir(out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "spec.json").write_text(spec.model_dump_json(indent=2) + "\n", encoding="utf-8")
    already = sum(done)
    if on_progress is not None and already:
        on_progress(already)
    chunks: list[Chunk] = []
    owner: list[int] = []
    for index, ((spec, _), skip) in enumerate(zip(runs, done, strict=True)):
        planned = plan_chunks(spec, skip=skip, parallelism=parallelism)
        chunks += planned
        owner += [index] * len(planned)
    writer = _Writers(runs, on_run)
    try:
        stream = run_in_order(executor or SerialExecutor(), chunks, 2 * parallelism + 1)
        for index, result in zip(owner, stream, strict=True):
            writer.write(index, result)
            if on_progress is not None:
                on_progress(result.chunk.stop - result.chunk.start)
    finally:
        writer.close()
    return [
        finish_run(spec, out, figures=figures, resumed_from=skip)
        for (spec, out), skip in zip(runs, done, strict=True)
    ]


class _Writers:
    """The open episodes/steps files of the run being written (one at a time, in order)."""

    def __init__(
        self, runs: Sequence[tuple[ExperimentSpec, Path]], on_run: Callable[[int], None] | None
    ) -> None:
        self.runs = runs
        self.on_run = on_run
        self.index: int | None = None
        self.files: tuple[IO[str], IO[str]] | None = None

    def write(self, index: int, result: ChunkResult) -> None:
        if index != self.index:
            self.close()
            out = self.runs[index][1]
            self.files = (
                open(out / "episodes.jsonl", "a", encoding="utf-8"),  # noqa: SIM115
                open(out / "steps.jsonl", "a", encoding="utf-8"),  # noqa: SIM115
            )
            self.index = index
            if self.on_run is not None:
                self.on_run(index)
        assert self.files is not None
        episodes_file, steps_file = self.files
        steps_file.write(result.steps)
        steps_file.flush()
        episodes_file.write(result.episodes)
        episodes_file.flush()
        if result.calls:  # LLM agents (issue 7): their model calls
            with open(self.runs[index][1] / CALLS_FILE, "a", encoding="utf-8") as calls_file:
                calls_file.write(result.calls)

    def close(self) -> None:
        if self.files is not None:
            for f in self.files:
                f.close()
        self.files = None


def finish_run(
    spec: ExperimentSpec, out: Path, *, figures: bool = True, resumed_from: int = 0
) -> RunResult:
    """Write summary.json and the figures from the files on disk."""
    summary = Summary()
    attempt_rows: dict[str, list[tuple[int, int, bool]]] = {}
    last: dict[str, Any] | None = None
    for row in read_jsonl(out / "episodes.jsonl"):
        # issue 6: with Reflexion attempts an episode seed has several rows, in attempt
        # order; the summary judges each seed by its last attempt
        if last is not None and _key(last) != _key(row):
            summary.add_row(last)
        last = row
        attempt_rows.setdefault(str(row["controller"]), []).append(
            (int(row["episode"]), int(row.get("attempt", 1)), bool(row["success"]))
        )
    if last is not None:
        summary.add_row(last)
    table = summary.as_dict()
    (out / "summary.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    write_llm_summary(out)  # llm.json, for runs with an LLM agent (issue 7)
    written: list[str] = []
    if figures:
        progress, estimate = _convergence_series(out / "steps.jsonl")
        title = f"{spec.name}: progress per loop iteration ({spec.episodes} episodes each)"
        written = plots.save(
            plots.convergence_figure(progress, estimate, title), str(out / "progress")
        )
        if spec.reflexion.attempts > 1:
            curves = {
                name: success_by_attempt(rows, spec.reflexion.attempts)
                for name, rows in attempt_rows.items()
            }
            fig = memory_plots.learning_curve_figure(curves, f"{spec.name}: success by attempt")
            written += plots.save(fig, str(out / "learning_curve"))
    return RunResult(out, table, written, resumed_from)


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


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the complete lines of a JSON-lines file."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.endswith("\n"):
                yield orjson.loads(line)


def _resume_point(spec: ExperimentSpec, out: Path) -> int:
    """Check ``out`` holds this spec's run, cut any half-written tail, return episodes done."""
    if spec.reflexion.attempts > 1:
        raise SpecError("--resume: runs with [reflexion] attempts > 1 cannot be resumed yet")
    spec_file = out / "spec.json"
    if not spec_file.is_file():
        raise SpecError(f"--resume: {out} holds no run to resume")
    on_disk = ExperimentSpec.model_validate_json(spec_file.read_text(encoding="utf-8"))
    if on_disk != spec:
        raise SpecError(f"--resume: the spec differs from the one that started {out}")
    names = [c.name for c in spec.controller_list()]
    expected = [(n, i) for n in names for i in range(spec.episodes)]
    done = _cut_after(
        out / "episodes.jsonl", lambda k, row: expected[k] == _key(row), len(expected)
    )
    finished = set(expected[:done])
    _cut_after(out / "steps.jsonl", lambda _k, row: _key(row) in finished, None)
    return done


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return (str(row["controller"]), int(row["episode"]))


def _cut_after(path: Path, keep: Callable[[int, dict[str, Any]], bool], limit: int | None) -> int:
    """Keep the leading complete lines that ``keep`` accepts; truncate the rest; count them."""
    if not path.exists():
        path.touch()
        return 0
    kept = 0
    offset = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n") or (limit is not None and kept >= limit):
                break
            try:
                row = json.loads(raw)
            except ValueError:
                break
            if not keep(kept, row):
                break
            kept += 1
            offset += len(raw)
    with open(path, "r+b") as f:
        f.truncate(offset)
    return kept


def _convergence_series(
    steps_path: Path,
) -> tuple[dict[str, list[list[float]]], dict[str, list[list[float]]]]:
    """Per controller, each episode's true and estimated progress by step (first episodes)."""
    progress: dict[str, list[list[float]]] = {}
    estimate: dict[str, list[list[float]]] = {}
    current: tuple[str, int, int] | None = None
    true_row: list[float] = []
    est_row: list[float] = []
    for row in read_jsonl(steps_path):
        if row.get("parent") is not None:
            continue  # a sub-agent's step: the figure follows the top-level agent
        key = (*_key(row), int(row.get("attempt", 1)))  # issue 6: attempts are episodes here
        if key != current:
            if current is not None and len(progress.get(current[0], [])) < FIGURE_EPISODES:
                progress.setdefault(current[0], []).append(true_row)
                estimate.setdefault(current[0], []).append(est_row)
            current, true_row, est_row = key, [], []
        true_row.append(float(row["progress"]))
        est_row.append(float(row["delta_task"] if row["delta_task"] is not None else 0.0))
    if current is not None and len(progress.get(current[0], [])) < FIGURE_EPISODES:
        progress.setdefault(current[0], []).append(true_row)
        estimate.setdefault(current[0], []).append(est_row)
    return progress, estimate
