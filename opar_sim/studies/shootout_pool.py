"""The shoot-out on a local process pool: each tuning replicate one job, both cores busy to the end.

Run from the parent, a screened replicate leaves the pool idle while its trials are
screened on the batch engine (in the parent), and every SimPy evaluation waits for its
slowest chunk before the next starts.  Here each (law, replicate) is one job of the pool
(``run_replicate``): its screened trials, its finalists and its held-out episodes run one
after the other in one worker, the two workers run two replicates at once, and the laws'
shipped defaults on the held-out episodes follow as the SimPy engine's chunks, which fill
the last seconds.  The longest jobs go first.

Nothing a replicate computes depends on where it runs: its search and its batch streams
are its own, each SimPy episode's randomness comes from its seed and number alone, and
its chunks are planned for the pool's parallelism as in the parent (``run_replicate``
runs them in the worker, in order).  The rows and scores are the parent's, to the bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

from opar_sim.running.chunks import ChunkResult, run_chunk
from opar_sim.running.executors import Reports, StoppableExecutor, tick, wait_polling
from opar_sim.running.search import (
    Evaluate,
    batch_evaluate,
    evaluation_chunks,
    executor_evaluate,
    rows_of,
    warm_batch,
)
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import Objective, ParamRange
from opar_sim.studies.contender import Budget, Tuned, tune_contender

# a screened trial (the batch engine) costs about a tenth of its episodes on the SimPy engine
SCREEN_SHARE = 0.1


@dataclass(frozen=True)
class ReplicateJob:
    """One replicate of one law, as ``ShootoutPlan.run`` tunes it in the parent."""

    name: str
    data: dict[str, Any]  # the spec running this law alone
    space: dict[str, ParamRange]
    screened: bool
    objective: Objective
    budget: Budget
    finalists: int
    parallelism: int  # the pool's: sizes the SimPy chunks as the parent would

    @property
    def cost(self) -> float:
        """The job's length in SimPy-episode equivalents (to start the longest first)."""
        b = self.budget
        searched = b.trials * b.train_episodes * (SCREEN_SHARE if self.screened else 1.0)
        confirmed = min(self.finalists, b.trials) * b.train_episodes if self.screened else 0
        return searched + confirmed + b.holdout_episodes


def run_replicate(job: ReplicateJob) -> Tuned:
    """Tune one replicate in this process (a pool worker), ticking after each trial.

    Its SimPy chunks run here, one after the other; each checks first whether the parent
    asked every job to stop (Ctrl-C, a failed job).

    Returns:
        What ``tune_contender`` returns in the parent for the same replicate.
    """
    evaluate = executor_evaluate(job.data, StoppableExecutor(), job.parallelism, parse_spec)
    return _tune(job, evaluate, tick)


def _tune(job: ReplicateJob, evaluate: Evaluate, on_trial: Callable[[], None] | None) -> Tuned:
    """``tune_contender`` of one replicate: screened on the batch engine if ``job.screened``."""
    screen = batch_evaluate(job.data, parse_spec) if job.screened else None
    return tune_contender(
        job.name,
        job.space,
        evaluate,
        job.objective,
        job.budget,
        on_trial,
        screen=screen,
        finalists=job.finalists,
    )


def run_here(
    jobs: Sequence[Sequence[ReplicateJob]],
    pool: Executor,
    on_trial: Callable[[], None] | None = None,
) -> tuple[list[list[Tuned]], list[list[dict[str, Any]]]]:
    """Every law's replicates and its defaults' held-out rows, searched in this process.

    Each law's trials are screened here; its SimPy episodes run on ``pool`` (any executor),
    one evaluation after the other.

    Args:
        jobs: Each law's replicates, in replicate order.
        pool: Where the SimPy engine's chunks run.
        on_trial: Called after each trial of every replicate.

    Returns:
        Each law's tuned replicates (in replicate order) and its defaults' held-out rows.
    """
    tuned, defaults = [], []
    for replicates in jobs:
        first = replicates[0]
        evaluate = executor_evaluate(first.data, pool, first.parallelism, parse_spec)
        tuned.append([_tune(job, evaluate, on_trial) for job in replicates])
        b = first.budget
        defaults.append(evaluate(None, b.holdout_episodes, b.holdout_seed))
    return tuned, defaults


def run_pooled(
    jobs: Sequence[Sequence[ReplicateJob]],
    pool: Executor,
    reports: Reports,
    on_trial: Callable[[], None] | None = None,
) -> tuple[list[list[Tuned]], list[list[dict[str, Any]]]]:
    """Every law's replicates and its defaults' held-out rows, each replicate a job of ``pool``.

    Args:
        jobs: Each law's replicates, in replicate order (every law has one at least).
        pool: A process pool opened with ``reports``.
        reports: The channel its workers tick (one tick per trial).
        on_trial: Called once per trial of every replicate, as the ticks arrive.

    Returns:
        Each law's tuned replicates (in replicate order) and its defaults' held-out rows.
    """
    parallelism = jobs[0][0].parallelism
    warm_batch(replicates[0].data for replicates in jobs if replicates[0].screened)
    order = sorted(
        ((law, r) for law, replicates in enumerate(jobs) for r in range(len(replicates))),
        key=lambda lr: -jobs[lr[0]][lr[1]].cost,
    )
    tuned: dict[Future[Tuned], tuple[int, int]] = {
        pool.submit(run_replicate, jobs[law][r]): (law, r) for law, r in order
    }
    chunks: list[list[Future[ChunkResult]]] = []
    for replicates in jobs:  # each law's shipped defaults on the held-out episodes
        first = replicates[0]
        b = first.budget
        plan = evaluation_chunks(
            first.data, parse_spec, None, b.holdout_episodes, b.holdout_seed, parallelism
        )
        chunks.append([pool.submit(run_chunk, c) for c in plan])
    seen = [0]

    def advance() -> None:  # ``on_trial`` once per tick since the last poll
        now = reports.ticks
        if on_trial is not None:
            for _ in range(now - seen[0]):
                on_trial()
        seen[0] = now

    wait_polling([*tuned, *(f for law in chunks for f in law)], advance)
    out: list[list[Tuned]] = [[] for _ in jobs]
    for future, (law, _) in sorted(tuned.items(), key=lambda item: item[1]):
        out[law].append(future.result())
    rows = [rows_of(f.result().episodes for f in law) for law in chunks]
    return out, rows
