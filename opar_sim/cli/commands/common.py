"""What the commands share: argument types, common flags and the usage error."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from opar_sim.core.errors import InputError
from opar_sim.rundir import default_run_dir
from opar_sim.running.executors import ExecutorConfig, capped_workers
from opar_sim.spec.schema import ExperimentSpec


class UsageError(InputError):
    """Bad input from the user: reported in one line, exit status 2."""


# ceilings of sizes that would run for days or allocate without bound, checked by argparse
MAX_TRIALS = 10_000  # Optuna trials (tune, shootout)
MAX_REPLICATES = 20  # tuning replicates (tune, shootout): the seed ledger holds 20 tuning seeds
MAX_FOLDS = 1_000  # calibrate's task folds
MAX_CELL_EPISODES = 100_000  # calibrate's simulated episodes per table cell


def int_at_least(minimum: int) -> argparse._ActionType:
    """An argparse type: an integer no smaller than ``minimum``."""
    return int_between(minimum, None)


def int_between(minimum: int, maximum: int | None) -> argparse._ActionType:
    """An argparse type: an integer from ``minimum`` to ``maximum`` (None: no ceiling).

    A size over its ceiling is refused before anything runs, in one line naming both.
    """

    def parse(text: str) -> int:
        digits = text.strip().lstrip("+-")
        if digits.isdigit() and len(digits) > 40:  # past any ceiling, and past int()'s limit
            if maximum is not None and not text.strip().startswith("-"):
                raise argparse.ArgumentTypeError(
                    f"must be at most {maximum:,}, got a number of {len(digits):,} digits"
                )
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:20]!r}...")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    return parse


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every command that runs episodes takes."""
    parser.add_argument("spec", help="experiment spec (TOML), e.g. experiments/flight_booking.toml")
    parser.add_argument("--episodes", type=int_at_least(1), help="override the episode count")
    parser.add_argument("--seed", type=int_at_least(0), help="override the spec's seed")
    parser.add_argument("--out", type=Path, help="run directory (default: runs/NAME/TIMESTAMP)")
    parser.add_argument(
        "--resume", action="store_true", help="finish an interrupted run in --out without repeats"
    )
    add_executor_flags(parser)
    parser.add_argument(
        "--engine",
        choices=("simpy", "batch"),
        default="simpy",
        help="simpy: the reference engine (default); batch: N episodes in numpy lockstep, "
        "in this process (tasks with an array twin, simulated agent; see docs/batch.md)",
    )


def add_confirm_flag(parser: argparse.ArgumentParser) -> None:
    """``--confirm K`` (the shared stop confirmation) and ``--trials N`` (repeated worlds)."""
    parser.add_argument(
        "--confirm",
        type=int_at_least(1),
        metavar="K",
        help="TERMINATE only on K consecutive completion claims, for every controller "
        "(sets [guards] confirm; a give-up is not delayed)",
    )
    parser.add_argument(
        "--trials",
        type=int_at_least(1),
        metavar="N",
        help="run every episode's world N times (agent and tools drawn afresh per trial; "
        "sets the spec's trials, for pass^k)",
    )


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    """Where episodes run: a local process pool (default), serial, or Dask."""
    parser.add_argument(
        "--workers",
        type=int_at_least(1),
        help="worker processes (default: one per core; 1 = serial)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also say how the episodes are run (serially or on a pool, and why)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on an existing Dask cluster")
    where.add_argument("--dask-local", action="store_true", help="run on a local Dask cluster")


# a Dask scheduler address: [protocol://]host:port (host a name, IPv4 or [IPv6])
SCHEDULER = re.compile(
    r"(?:(?:tcp|tls|ws|wss|ucx|inproc)://)?(?:\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5}"
)


def executor_config(args: argparse.Namespace) -> ExecutorConfig:
    """The executor the flags ask for; local workers capped at the machine's cores (said so)."""
    if args.scheduler:
        if not SCHEDULER.fullmatch(args.scheduler):
            raise UsageError(
                f"--scheduler {args.scheduler!r} is not a Dask scheduler address "
                "(HOST:PORT or tcp://HOST:PORT, e.g. tcp://127.0.0.1:8786)"
            )
        return ExecutorConfig("dask", args.workers, args.scheduler)
    workers, note = capped_workers(args.workers)
    if note:
        print(f"opar-sim: {note}", file=sys.stderr)
    if args.dask_local:
        return ExecutorConfig("dask", workers)
    if workers == 1:
        return ExecutorConfig("serial", 1)
    return ExecutorConfig("process", workers)


def out_dir(args: argparse.Namespace, name: str) -> Path:
    """--out, or a fresh directory; --resume needs an explicit --out."""
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR: the run directory to finish")
    out: Path = args.out or default_out(name)
    args.out = out  # the directory chosen, for the interrupted run's resume hint
    return out


def default_out(name: str) -> Path:
    """A fresh run directory under runs/."""
    return default_run_dir(name)


def require_backends(spec: ExperimentSpec, timeout: float = 5.0) -> None:
    """Before an LLM run: the checks of ``opar-sim doctor``; a failure is a usage error.

    A run whose backend is unreachable would otherwise end every episode as
    ``error:backend_unavailable`` and exit 0.  A simulated agent needs nothing.

    Raises:
        UsageError: naming each failed check and its fix, as ``doctor`` does.
    """
    from opar_sim.llm.config import BackendSpec
    from opar_sim.llm.health import check_backends

    agent = spec.agent
    if agent.kind != "llm" and agent.backend is None:
        return
    backends = [agent.backend or BackendSpec()]
    if agent.evaluator is not None:
        backends.append(agent.evaluator)
    bad = [c for c in check_backends(backends, timeout) if not c.ok]
    if bad:
        problems = "; ".join(f"{c.what}: {c.detail} (fix: {c.fix})" for c in bad)
        raise UsageError(
            f"the LLM backend is not ready, nothing was run: {problems}; "
            f"`opar-sim doctor SPEC` checks again"
        )
