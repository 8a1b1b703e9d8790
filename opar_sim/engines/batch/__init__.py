"""The lockstep batch engine: N episodes of the simulated agent advance together in arrays.

The SimPy engine (``opar_sim.core.loop``) is the reference; this engine runs
the same Algorithm 1 with the same noisy-expert model (``agents.expert_model``,
which ``SimulatedAgent`` runs on floats), the same tool timing
(``SimTask.execute``), the same hard limits, and a vectorised model of the task
(its array twin, ``opar_sim.core.twin``, registered beside the task: the engine
imports no task) and of the Reflect law (``controllers.batch``), on every
episode at once: step t of every live episode is one pass over arrays (row
loops compiled by Numba, and numpy).  Each episode keeps its
own simulated clock, advanced phase by phase, so the time budget cuts an
episode exactly where SimPy would (the tokens of a call are spent when it
starts, as in ``SimulatedAgent._llm_call``).

Its random streams are its own (one generator per chunk of episodes, from
the run seed and the chunk), so the two engines agree in distribution, not
episode by episode: ``tests/engines/test_batch.py`` checks success rate,
mean steps, tokens and REPLANs against the SimPy engine, and
``tests/engines/test_batch_exact.py`` replays the SimPy engine's recorded draws
(``engine.Draws``) and checks every decision.  Every law of a run
draws from the same stream, so episode i is the same world under each (common
random numbers across controllers, as in the SimPy engine): paired comparisons
of a batch ``compare`` pair like with like.
It runs the stop confirmation (``[guards] confirm``, every law's on equal
terms); what it does not run (a task without a twin, a wrapper its twin does
not model, LLM agents, the other guards, guardrails, Reflexion, trials, memory
compression) it refuses with a one-line ``SpecError``; what it leaves out of
the rows (steps.jsonl, answers of truncated episodes) is in docs/batch.md.

The package: ``engine`` (the state of N episodes and one step of the loop on
it), ``phases`` (the step's own arithmetic as compiled row loops), ``rows``
(the episodes as ``episodes.jsonl`` lines and Parquet, the steps through the
engine's ``record`` hook), ``lines``, ``line_kernel`` and ``coding`` (the
lines written from coded columns); here, what the engine accepts and how a run
is cut into chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from controllers.batch import Unsupported, from_scalar
from opar_sim.agents.simulated import SimulatedAgent
from opar_sim.core.twin import TWINS, TwinUnsupported, twin_of
from opar_sim.engines.batch.compiling import COMPILING, compile_notice
from opar_sim.engines.batch.engine import BatchEpisodes, _Engine
from opar_sim.engines.batch.rows import StepRecorder, episode_rows, episode_table, episode_text
from opar_sim.spec.build import build
from opar_sim.spec.schema import ExperimentSpec, SpecError

__all__ = [
    "COMPILING",
    "ENGINES",
    "BatchEpisodes",
    "StepRecorder",
    "check_batch",
    "compile_notice",
    "episode_rows",
    "episode_table",
    "episode_text",
    "run_batch",
    "step_recorder",
]

ENGINES = ("simpy", "batch")
BATCH_STREAM = 0xBA7C4  # the spawn-key tag of the batch engine's generators
CHUNK = 100_000  # episodes held in arrays at once (memory stays flat past it)


def check_batch(spec: ExperimentSpec) -> None:
    """Refuse, in one line, a spec the batch engine cannot run.

    Args:
        spec: A validated spec.

    Raises:
        SpecError: Naming the first feature the engine lacks.
    """
    problem = batch_unsupported(spec)
    if problem is not None:
        raise SpecError(f"--engine batch: {problem} (use the SimPy engine)")


def batch_unsupported(spec: ExperimentSpec) -> str | None:
    """The first feature of ``spec`` the batch engine lacks, or None when it runs it.

    Args:
        spec: A validated spec.

    Returns:
        A short reason (``check_batch`` words it as an error), or None.
    """
    if spec.task.name not in TWINS:
        have = ", ".join(repr(name) for name in sorted(TWINS))
        return f"no vectorised model of task {spec.task.name!r} (twins: {have})"
    if spec.agent.kind != "simulated":
        return f"agent kind {spec.agent.kind!r} (only the simulated agent)"
    if spec.trials > 1 or spec.reflexion.attempts > 1:
        return "trials and Reflexion attempts are not modelled"
    if spec.guardrail is not None:
        return "guardrails are not modelled"
    parts = build(spec)
    others = [name for name, _ in spec.guards.enabled() if name != "confirm"]
    if others:
        return f"[guards] other than confirm are not modelled ({', '.join(others)})"
    agent = parts.make_agent()
    if not isinstance(agent, SimulatedAgent) or type(agent) is not SimulatedAgent:
        return "only the plain simulated agent"
    if agent.params.context_max is not None:
        return "memory compression (context_max) is not modelled"
    try:
        twin_of(parts.make_task())
    except TwinUnsupported as exc:
        return str(exc)
    for _, make in parts.controllers:
        try:
            from_scalar(make(), make)
        except Unsupported as exc:
            return str(exc)
    return None


def step_recorder(spec: ExperimentSpec) -> StepRecorder:
    """A recorder of the step rows of ``spec``'s batch runs (``run_batch(steps=...)``).

    Args:
        spec: A spec the batch engine supports (``check_batch``).

    Returns:
        An empty recorder, naming actions as the scalar task does (its twin's ``label``).
    """
    return StepRecorder(twin_of(build(spec).make_task()).label)


def run_batch(
    spec: ExperimentSpec,
    controller: int,
    start: int,
    stop: int,
    steps: StepRecorder | None = None,
) -> BatchEpisodes:
    """Run episodes ``start``..``stop - 1`` of controller number ``controller`` of ``spec``.

    Args:
        spec: A spec the batch engine supports (``check_batch``).
        controller: The index of the controller in ``spec.controller_list()``.
        start: The first episode.
        stop: One past the last episode.
        steps: Where to keep every step's row (``step_recorder``); None keeps none.

    Returns:
        The episodes' results, in episode order.
    """
    parts = build(spec)
    task = parts.make_task()
    agent = parts.make_agent()
    assert isinstance(agent, SimulatedAgent)
    make = parts.controllers[controller][1]
    law = from_scalar(make(), make)
    goal_tokens = max(1, len(task.goal) // 4)
    pieces: list[BatchEpisodes] = []
    for first in range(start, stop, CHUNK):
        last = min(stop, first + CHUNK)
        # every law of the run draws from the same stream (the first law's, as before): the
        # same worlds in episode i for each, common random numbers across controllers
        seed = np.random.SeedSequence(spec.seed, spawn_key=(BATCH_STREAM, 0, first))
        engine = _Engine(
            twin_of(task),
            law,
            agent.params,
            parts.limits,
            goal_tokens,
            np.random.default_rng(seed),
            confirm=spec.guards.confirm or 1,
            record=None if steps is None else steps.chunk(first),
        )
        pieces.append(engine.run(last - first))
    return _concat(pieces)


def _concat(pieces: list[BatchEpisodes]) -> BatchEpisodes:
    if len(pieces) == 1:
        return pieces[0]
    fields: dict[str, Any] = {}
    for name in BatchEpisodes.__dataclass_fields__:
        if name not in ("answer_fields", "words"):
            fields[name] = np.concatenate([getattr(piece, name) for piece in pieces])
    answers = {
        key: np.concatenate([piece.answer_fields[key] for piece in pieces])
        for key in pieces[0].answer_fields
    }
    return BatchEpisodes(**fields, answer_fields=answers, words=pieces[0].words)
