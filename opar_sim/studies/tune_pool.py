"""A screened tuning on a local process pool: each replicate one job, both cores busy.

Run from the parent, ``tune --engine batch`` screens every trial on the batch engine in
the parent while the pool waits for the finalists' SimPy episodes (on 2 cores a
5-replicate tuning of the PID took 15.9 s of wall time against 21.6 s on one).  Here each
replicate is one job (``run_replicate``): its screened trials and its finalists run one
after the other in one worker, the two workers run two replicates at once; the race and
the held-out episodes then run in the parent on the pool's chunks, as before.

Nothing a replicate computes depends on where it runs: its Optuna sampler is seeded, its
batch streams are its own, each SimPy episode's randomness comes from its seed and number
alone, and its SimPy chunks are planned for the pool's parallelism as in the parent.  Each
finished trial comes back to the parent as it finishes (``executors.send``), so the
progress bar and ``on_trial`` see every trial as they did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opar_sim.running.executors import Reports, StoppableExecutor, send, wait_polling
from opar_sim.running.search import Evaluate, batch_evaluate, executor_evaluate, warm_batch
from opar_sim.spec.build import parse_spec
from opar_sim.spec.schema import TuneSpec
from opar_sim.studies.finalists import Trial
from opar_sim.studies.gains import Replicate, search_replicate


@dataclass(frozen=True)
class ReplicateJob:
    """One replicate of a tuning: what ``search_replicate`` needs besides its evaluations."""

    data: dict[str, Any]  # the spec's data, without its [tune] table
    settings: TuneSpec
    index: int
    train_seed: int
    sampler_seed: int
    storage: Any  # its Optuna journal storage (pickled to the worker), or None
    resume: bool
    finalists: int
    parallelism: int  # the pool's: sizes the SimPy chunks as the parent would


def run_replicate(job: ReplicateJob) -> Replicate:
    """Search one replicate in this process (a pool worker), sending each trial as it ends.

    Its finalists' SimPy chunks run here, one after the other; each checks first whether
    the parent asked every job to stop (Ctrl-C, a failed job), as does each trial.

    Returns:
        What ``search_replicate`` returns in the parent for the same replicate.
    """
    return search(
        job,
        batch_evaluate(job.data, parse_spec),
        executor_evaluate(job.data, StoppableExecutor(), job.parallelism, parse_spec),
        lambda trial: send((job.index, trial)),
    )


def search(
    job: ReplicateJob,
    screen: Evaluate,
    confirm: Evaluate | None,
    on_trial: Callable[[Trial], None] | None,
) -> Replicate:
    """``search_replicate`` of ``job`` (in a worker, or in the parent when not pooled).

    Args:
        job: The replicate.
        screen: Scores each trial (the batch engine when screening, else SimPy).
        confirm: Re-scores the finalists on SimPy when ``screen`` is the batch engine.
        on_trial: Called with each finished trial.
    """
    return search_replicate(
        job.settings,
        screen,
        job.train_seed,
        job.sampler_seed,
        on_trial,
        index=job.index,
        storage=job.storage,
        resume=job.resume,
        confirm=confirm,
        finalists=job.finalists,
    )


def run_pooled(
    jobs: Sequence[ReplicateJob],
    pool: Any,
    reports: Reports,
    on_trial: Callable[[Trial], None] | None = None,
) -> list[Replicate]:
    """Every replicate of a screened tuning, each a job of ``pool``.

    The batch engine runs briefly here first (``warm_batch``), so a cold cache's compile
    happens once, where the command says so.

    Args:
        jobs: The replicates, in replicate order.
        pool: A process pool opened with ``reports``.
        reports: The channel its workers send each finished trial on.
        on_trial: Called with each finished trial of every replicate, as they arrive (a
            trial whose message is late is given once its replicate has returned).

    Returns:
        The replicates, in replicate order.
    """
    warm_batch(job.data for job in jobs[:1])
    futures = [pool.submit(run_replicate, job) for job in jobs]
    given: set[tuple[int, int]] = set()

    def give(index: int, trial: Trial) -> None:
        if (index, trial.number) not in given:
            given.add((index, trial.number))
            if on_trial is not None:
                on_trial(trial)

    def poll() -> None:
        for index, trial in reports.received():
            give(index, trial)

    wait_polling(futures, poll)
    replicates = [f.result() for f in futures]
    for rep in replicates:  # a message the queue had not delivered yet
        for trial in rep.trials:
            give(rep.index, trial)
    return replicates
