"""Chunks of episodes: the unit of work sent to an executor.

A chunk names the resolved spec (as JSON, so it pickles small and hashes),
one controller of it and a range of episode indices; with ``trials`` > 1 in
the spec each episode (a world) is run ``trials`` times in a row.  A worker builds the
components from the spec once per process (``opar_sim.spec.build``),
runs the episodes and sends back their lines, ready to append to the run
directory.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from opar_sim.core.agent import LogsCalls
from opar_sim.core.reflexion import run_attempts
from opar_sim.core.seeding import episode_seed
from opar_sim.rundir import (
    EpisodeTrace,
    UnusualTrace,
    call_lines,
    episode_lines,
    result_trace,
)
from opar_sim.spec.build import Components, build
from opar_sim.spec.schema import ExperimentSpec

_SPECS: dict[str, ExperimentSpec] = {}


@dataclass(frozen=True, slots=True)
class Chunk:
    """Episodes ``start``..``stop - 1`` of controller number ``controller`` of a spec."""

    spec_json: str
    controller: int
    start: int
    stop: int
    with_steps: bool = True
    traces: bool = False  # also send back each episode's trajectory (``run``'s figure)

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.stop:
            raise ValueError("a chunk needs 0 <= start < stop")


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """The lines of a chunk's episodes and steps, in episode order."""

    chunk: Chunk
    episodes: str
    steps: str
    calls: str = ""  # LLM agents: calls.jsonl lines
    # with ``chunk.traces``: the trajectories its steps.jsonl lines read back as (episodes
    # without steps have none), so the parent draws without reading the file again;
    # None when an episode's would not read back the same (the parent reads the file)
    traces: list[EpisodeTrace] | None = None


def _components(spec_json: str) -> tuple[ExperimentSpec, Components]:
    """The chunk's spec and its parts: validated once, built once per process (``build``)."""
    spec = _SPECS.get(spec_json)
    if spec is None:
        if len(_SPECS) >= 512:
            _SPECS.clear()
        spec = _SPECS[spec_json] = ExperimentSpec.model_validate_json(spec_json)
    return spec, build(spec)


def run_chunk(chunk: Chunk) -> ChunkResult:
    """Run a chunk's episodes; module-level so every executor can pickle it."""
    spec, parts = _components(chunk.spec_json)
    task = parts.make_task()
    agent = parts.make_agent()
    controller = parts.controllers[chunk.controller][1]()
    supervisor = parts.make_supervisor()  # the [guards] table; reset every episode
    episode_text: list[str] = []
    step_text: list[str] = []
    call_text: list[str] = []
    drain_calls = agent.drain_calls if isinstance(agent, LogsCalls) else None
    traces: list[EpisodeTrace] | None = [] if chunk.traces else None
    for i, trial in _episode_trials(chunk, spec.trials):
        started = time.perf_counter()
        # Reflexion attempts (1 by default) and guardrails (None by default); a fresh
        # SeedSequence per trial, as ``streams`` advances the one it splits
        tries = run_attempts(
            task,
            agent,
            controller,
            parts.limits,
            episode_seed(spec.seed, i),
            attempts=spec.reflexion.attempts,
            keep=spec.reflexion.keep,
            episode=i,
            guardrail=parts.guardrail,
            supervisor=supervisor,
            trial=trial,
        )
        if drain_calls is not None:
            call_text.append(call_lines(drain_calls(), tries, time.perf_counter() - started))
        for result in tries:
            if spec.trials > 1:  # rows carry `trial` only then: trials = 1 keeps its bytes
                result.trial = trial
            episode, steps = episode_lines(result, steps=chunk.with_steps)
            episode_text.append(episode)
            if chunk.with_steps:
                step_text.append(steps)
            if traces is not None:
                try:
                    trace = result_trace(result, labels=False)  # the figure draws no labels
                except UnusualTrace:
                    traces = None
                else:
                    if trace is not None:
                        traces.append(trace)
    return ChunkResult(chunk, "".join(episode_text), "".join(step_text), "".join(call_text), traces)


def _episode_trials(chunk: Chunk, trials: int) -> Iterator[tuple[int, int]]:
    """(episode, trial) of a chunk in file order: each episode's trials 1..``trials`` in turn."""
    for i in range(chunk.start, chunk.stop):
        for trial in range(1, trials + 1):
            yield i, trial


def plan_chunks(
    spec: ExperimentSpec,
    skip: int = 0,
    parallelism: int = 1,
    with_steps: bool = True,
    traces: int = 0,
) -> list[Chunk]:
    """All chunks of a spec in file order (controller, then episode), after ``skip`` episodes.

    Chunks are small enough to keep every worker busy and to stream results,
    and large enough that sending them costs little next to running them.

    Args:
        spec: The spec.
        skip: Episodes already done, counted over the controllers in file order.
        parallelism: The executor's workers.
        with_steps: Send back the steps.jsonl lines.
        traces: Send back the trajectories of the chunks that start below this episode.

    Returns:
        The chunks, in file order.
    """
    spec_json = spec.model_dump_json()
    size = max(1, min(50, spec.episodes // (8 * parallelism) or 1, 50 // spec.trials or 1))
    chunks: list[Chunk] = []
    for c in range(len(spec.controller_list())):
        first = max(0, skip - c * spec.episodes)
        for start in range(first, spec.episodes, size):
            stop = min(spec.episodes, start + size)
            chunks.append(Chunk(spec_json, c, start, stop, with_steps, start < traces))
    return chunks
