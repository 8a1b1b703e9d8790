"""The executor seam: where chunks of episodes run.

Every backend is a ``concurrent.futures.Executor``: ``serial`` runs each chunk
when it is submitted, ``process`` is a local process pool sized to the
machine's cores (the default), and ``dask`` is a Dask cluster, either an
existing one (``--scheduler ADDRESS``) or a local one (``--dask-local``),
through ``distributed.Client.get_executor``.  Results never depend on the
backend: each episode's randomness comes from its own seed.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar

from opar_sim.extras import install_hint

P = ParamSpec("P")
T = TypeVar("T")

Kind = Literal["serial", "process", "dask"]

DASK_CONNECT_TIMEOUT = "10s"  # how long to wait for an existing scheduler

# Below this many episodes a run is faster serially than on a pool it did not ask for: each
# spawned worker first imports what runs episodes (numpy, simpy, pydantic, the registries:
# about 0.7 s of CPU), and a simulated episode costs about 3 ms, so two workers break even
# near 700 episodes and gain a clear share only from a few thousand.
POOL_MIN_EPISODES = 2_000
POLL_SECONDS = 0.25  # how often a parent waiting on long pool jobs reads their reports


class ExecutorError(RuntimeError):
    """An executor could not be started (bad address, missing package)."""


class SerialExecutor(Executor):
    """Runs each submitted call at once, in this process."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Call ``fn`` now and return a future already holding its result or exception."""
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered through the future, as a pool would
            future.set_exception(exc)
        return future


@dataclass(frozen=True)
class ExecutorConfig:
    """Which backend, and how many workers (None: one per core)."""

    kind: Kind = "process"
    workers: int | None = None
    scheduler: str | None = None  # dask: address of an existing scheduler

    @property
    def parallelism(self) -> int:
        """How many chunks run at once: 1 for serial, else the workers or the core count.

        Processes started on this machine (a pool, a local Dask cluster) never outnumber its
        cores, whatever was asked (``capped_workers`` says so to the user); workers of a
        remote Dask scheduler are that cluster's.
        """
        if self.kind == "serial":
            return 1
        if self.kind == "dask" and self.scheduler:
            return self.workers or cores()
        return min(self.workers or cores(), cores())


def cores() -> int:
    """The cores this process may run on (its affinity where the OS reports one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def capped_workers(workers: int | None) -> tuple[int | None, str | None]:
    """``--workers N`` for processes on this machine: at most one per core.

    Returns:
        The worker count to use, and the line that says it was capped (None: unchanged).
    """
    if workers is None or workers <= cores():
        return workers, None
    return cores(), f"--workers {workers:,}: capped at {cores()}, the cores of this machine"


def fit_to_size(config: ExecutorConfig, episodes: int) -> tuple[ExecutorConfig, str | None]:
    """Serial execution for a run too small to gain from the default process pool.

    Only the default (``process`` with no worker count asked for) changes: an
    explicit ``--workers N`` or a Dask cluster is kept whatever the size.

    Args:
        config: The executor the flags ask for.
        episodes: How many episodes the run holds (every controller and trial).

    Returns:
        The executor to use, and the line that says why it changed (None: unchanged).
    """
    if config.kind != "process" or config.workers is not None or episodes >= POOL_MIN_EPISODES:
        return config, None
    note = (
        f"{episodes:,} episodes run serially: a process pool pays for its start-up only from "
        f"about {POOL_MIN_EPISODES:,} (--workers N asks for one anyway)"
    )
    return ExecutorConfig("serial", 1), note


def _ignore_interrupts() -> None:
    """In a pool worker: Ctrl-C is the parent's to handle (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Stopped(Exception):
    """A pool worker's job ended early: the parent asked every job to stop (``Reports``)."""


@dataclass(frozen=True)
class Reports:
    """Ticks that long jobs in pool workers send the parent as they go, and a stop request.

    A job of many steps (a whole tuning replicate) calls ``tick`` after each step; the
    parent reads ``ticks`` to advance its progress bar, and sets ``stop`` (Ctrl-C, a
    failed job) so running jobs end at their next tick instead of running to their end.
    A job that has something to say with its tick (a finished trial) calls ``send``; the
    parent takes it with ``received``.
    """

    counter: Any  # a shared integer (multiprocessing.Value), the ticks so far
    stop: Any  # a multiprocessing.Event
    sent: Any  # a multiprocessing.Queue: what the jobs ``send``, as they send it

    @classmethod
    def create(cls) -> Reports:
        """A fresh channel for a spawned pool (``open_executor(config, reports)``)."""
        context = multiprocessing.get_context("spawn")
        return cls(context.Value("q", 0), context.Event(), context.Queue())

    @property
    def ticks(self) -> int:
        """The ticks every worker has sent so far."""
        return int(self.counter.value)

    def received(self) -> list[Any]:
        """What the jobs have sent since the last call, without waiting for more.

        A queue's item can reach the parent after the job that sent it has returned (a
        worker's feeder thread writes it), so a caller that must see every item reconciles
        with the jobs' results at the end.
        """
        found = []
        while True:
            try:
                found.append(self.sent.get_nowait())
            except queue.Empty:
                return found


_REPORTS: Reports | None = None  # in a pool worker opened with ``reports``
_PARENT: int | None = None  # that worker's parent process, as it started


def _start_worker(reports: Reports | None) -> None:
    """A pool worker's initializer: no Ctrl-C, and the parent's report channel if any."""
    global _REPORTS, _PARENT
    _ignore_interrupts()
    _REPORTS = reports
    _PARENT = os.getppid()


def check_stop() -> None:
    """In a job of a pool opened with ``reports``: end it if the parent asked or died.

    A parent killed outright (SIGKILL, the OOM killer) asks nothing, and a worker in a long
    job would run it to its end, appending to a tuning's journal while ``--resume`` reads
    it; orphaned, it has another parent process, and stops at its next tick.  Elsewhere
    nothing.

    Raises:
        Stopped: the parent asked every job to stop, or is gone.
    """
    if _REPORTS is None:
        return
    if _REPORTS.stop.is_set():
        raise Stopped("stopped by the parent")
    if _PARENT is not None and os.getppid() != _PARENT:
        raise Stopped("the parent process is gone")


def tick() -> None:
    """In a job of a pool opened with ``reports``: one tick; elsewhere nothing.

    Raises:
        Stopped: the parent asked every job to stop.
    """
    reports = _REPORTS
    if reports is None:
        return
    check_stop()
    with reports.counter.get_lock():
        reports.counter.value += 1


def send(payload: Any) -> None:
    """In a job of a pool opened with ``reports``: ``tick``, and ``payload`` to the parent.

    Elsewhere nothing.

    Raises:
        Stopped: the parent asked every job to stop.
    """
    reports = _REPORTS
    if reports is None:
        return
    tick()
    reports.sent.put(payload)


def wait_polling(futures: Iterable[Future[Any]], poll: Callable[[], None]) -> None:
    """Wait for every future, calling ``poll`` every ``POLL_SECONDS`` and once at the end.

    Raises:
        Exception: a failed future's error, as soon as it is seen (``open_executor`` then
            stops the other jobs).
    """
    pending = set(futures)
    while pending:
        done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
        poll()
        for future in done:
            future.result()
    poll()


class StoppableExecutor(SerialExecutor):
    """A ``SerialExecutor`` for a pool job: each call first checks the parent's stop request."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """``check_stop``, then call ``fn`` now (``SerialExecutor.submit``).

        Raises:
            Stopped: the parent asked every job to stop.
        """
        check_stop()
        return super().submit(fn, *args, **kwargs)


@contextmanager
def open_executor(config: ExecutorConfig, reports: Reports | None = None) -> Iterator[Executor]:
    """Start the configured executor and shut it down afterwards.

    Args:
        config: The backend and its workers.
        reports: A process pool's workers tick this channel (``tick``); other executors
            ignore it.
    """
    if config.kind == "serial" or (config.kind == "process" and config.parallelism == 1):
        yield SerialExecutor()
        return
    if config.kind == "process":
        # spawn, not fork: the parent may hold threads (the progress bar)
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(
            config.parallelism,
            mp_context=context,
            initializer=_start_worker,
            initargs=(reports,),
        )
        try:
            yield pool
        except BaseException:
            # Ctrl-C or an error: drop the queued chunks instead of finishing them, and
            # end the running jobs that tick at their next tick
            if reports is not None:
                reports.stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return
    with _dask_client(config) as client:
        executor: Any = client.get_executor()
        yield executor


@contextmanager
def _dask_client(config: ExecutorConfig) -> Iterator[Any]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ExecutorError(f"dask is not installed: {install_hint('dask')}") from None
    if config.scheduler:
        try:
            client = Client(config.scheduler, timeout=DASK_CONNECT_TIMEOUT)  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError) as exc:
            raise ExecutorError(
                f"cannot reach the Dask scheduler {config.scheduler}: {exc}"
            ) from None
        with client:
            yield client
        return
    with (
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=config.parallelism,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # the workers' own log lines stay off the terminal: a task's failure comes back
            # through its future (one line), and a heartbeat racing the cluster's close
            # logged a traceback at ERROR (seen once in ``make bench``)
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,  # type: ignore[no-untyped-call]
    ):
        yield client
