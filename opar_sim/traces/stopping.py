"""Exact stopping studies: laws that read only what a trace shows, replayed on recorded runs.

A law here watches a run turn by turn and may stop it after a turn.  It reads only
signals a recorded conversation shows: the turns, the tool calls, the token estimate,
tool errors, repeated identical calls and the hand-off to a human.  Each signal is a
running count that never decreases (``SIGNALS``), and every atomic law is "stop after
the first turn at which signal ≥ k"; a combination stops at the first of its parts to
fire.  Stopping earlier only cuts a recorded prefix, so the replay is exact:

- a success is kept when the stop comes at or after the turn that decided it: for an
  imported run its last tool call (the final database state is then reached; what
  follows is talk), for a simulated run its last step (the TERMINATE that claimed it);
- a failure stays a failure, and the turns and tool calls after the stop are saved.

Intervals come from a bootstrap over tasks (task ids resampled, their trials kept
together: trials of one task are not independent).

Registered Reflect controllers (pid, threshold, confidence, ...) cannot run on such
traces: they read the agent's self-evaluation (δ_task, confidence, the missing items)
or the hidden truth (oracle), which a recorded chat does not contain (``UNOBSERVABLE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.measure.group_bootstrap import group_resample_counts, ratio_estimates
from opar_sim.measure.stats import Estimate
from opar_sim.rundir import (
    RunDirError,
    check_run_dir,
    episode_key,
    iter_episodes,
    iter_steps,
)
from opar_sim.spec.schema import SpecError

IntArray = npt.NDArray[np.int64]

TRANSFER = "transfer_to_human_agents"

SIGNALS = {
    "steps": "turns (assistant turns, or simulated steps)",
    "calls": "tool calls",
    "tokens": "tokens (text-length estimate for imported runs)",
    "errors": "tool calls the tool answered with an error",
    "repeat": "the most times one identical call (same tool, same arguments) was made",
    "transfer": "calls to transfer_to_human_agents",
}
"""The running counts a law may read, each non-decreasing over a run's turns."""

UNOBSERVABLE = {
    "pid": "reads δ_task, the agent's self-evaluated progress, absent from a chat",
    "threshold": "reads δ_task and δ_plan (self-evaluation), absent from a chat",
    "confidence": "reads the agent's stated confidence, absent from a chat",
    "bang_bang": "reads δ_task (self-evaluation), absent from a chat",
    "stall_counter": "reads δ_task to count stalls, absent from a chat",
    "fixed_interval": "replans on a clock (a replan diverges from the record) and stops on δ_task",
    "open_loop": "stops when the plan runs out, and a chat shows no plan",
    "oracle": "reads the hidden truth (task complete?), which a trace only shows at the end",
}
"""Why each registered controller cannot replay on trace signals."""

DEFAULT_LAWS = (
    "calls:8,calls:10,calls:12,calls:15,repeat:2,repeat:3,errors:1,errors:2,transfer:1,"
    "calls:12+repeat:2,calls:12+errors:2,repeat:2+errors:2"
)


@dataclass(frozen=True, slots=True)
class RunCost:
    """One recorded run as running counts per turn, with what decided its outcome."""

    task: int  # the world (episode id); trials of a task share it
    trial: int
    success: bool
    decided_at: int  # the turn after which the outcome is fixed (0: before any turn)
    counts: dict[str, IntArray]  # signal -> running count after each turn (SIGNALS)

    @property
    def steps(self) -> int:
        """The run's turns."""
        return len(self.counts["steps"])

    def total(self, signal: str) -> int:
        """The run's final count of ``signal`` (0 for a run without turns)."""
        values = self.counts[signal]
        return int(values[-1]) if len(values) else 0


def _run_cost(episode: dict[str, Any], steps: list[dict[str, Any]]) -> RunCost:
    steps.sort(key=lambda r: int(r["step"]))
    imported = any("args_hash" in r for r in steps)
    if imported:
        calls = [int(r.get("tool_calls") or 0) for r in steps]
        identity = [(r.get("tool"), r.get("args_hash")) for r in steps]
        repeat = [int(r.get("repeat") or 0) for r in steps]
        transfer = [
            sum(c.get("tool") == TRANSFER for c in r["calls"])
            if r.get("calls")
            else int(r.get("tool") == TRANSFER)
            for r in steps
        ]
    else:  # a simulated run: one action per step, identified by its label
        calls = [int(r.get("tool") is not None) for r in steps]
        identity = [(r.get("tool"), r.get("action")) for r in steps]
        seen: dict[Any, int] = {}
        repeat = []
        for c, key in zip(calls, identity, strict=True):
            seen[key] = seen.get(key, 0) + c
            repeat.append(seen[key] if c else 0)
        transfer = [int(r.get("tool") == TRANSFER) for r in steps]
    errors = [int(bool(r.get("tool_error"))) for r in steps]
    tokens = np.array([int(r.get("tokens") or 0) for r in steps], dtype=np.int64)
    n = len(steps)
    if imported:
        with_calls = [k + 1 for k, c in enumerate(calls) if c]
        decided = with_calls[-1] if with_calls else 0
    else:
        decided = n
    counts = {
        "steps": np.arange(1, n + 1, dtype=np.int64),
        "calls": np.cumsum(np.array(calls, dtype=np.int64)),
        "tokens": np.maximum.accumulate(tokens) if n else tokens,
        "errors": np.cumsum(np.array(errors, dtype=np.int64)),
        "repeat": np.maximum.accumulate(np.array(repeat, dtype=np.int64))
        if n
        else np.zeros(0, np.int64),
        "transfer": np.cumsum(np.array(transfer, dtype=np.int64)),
    }
    return RunCost(
        int(episode["episode"]),
        int(episode.get("trial") or 1),
        bool(episode["success"]),
        decided,
        counts,
    )


def load_costs(path: str | Path, controller: str | None = None) -> list[RunCost]:
    """Every run of one controller in a run directory, as running counts per turn.

    Args:
        path: The run directory (imported or simulated).
        controller: The controller whose runs to read; needed only when the run holds
            several.

    Returns:
        One ``RunCost`` per episode row (the last Reflexion attempt of each, if several).

    Raises:
        SpecError: when the path is not a run directory, holds no episode, holds several
            controllers and none is chosen, or the chosen one is not in it.
    """
    try:
        p = check_run_dir(Path(path))
        episodes = {episode_key(row): row for row in iter_episodes(p)}
    except RunDirError as exc:
        raise SpecError(str(exc)) from None
    names = sorted({key[0] for key in episodes})
    if not names:
        raise SpecError(f"{path}: no finished episodes in episodes.jsonl")
    if controller is None:
        if len(names) > 1:
            raise SpecError(f"{path} holds several controllers ({', '.join(names)}): pick one")
        controller = names[0]
    elif controller not in names:
        raise SpecError(f"{path} has no runs of controller {controller!r} ({', '.join(names)})")
    grouped: dict[Any, list[dict[str, Any]]] = {}
    for row in iter_steps(p):
        key = episode_key(row)
        if key[0] == controller and row.get("parent") is None:
            grouped.setdefault(key, []).append(row)
    chosen = {key[:3]: key for key in episodes if key[0] == controller}  # last attempt wins
    return [_run_cost(episodes[key], grouped.get(key, [])) for key in chosen.values()]


@dataclass(frozen=True, slots=True)
class Law:
    """Stop after the first turn at which any part's signal reaches its threshold."""

    parts: tuple[tuple[str, int], ...]

    @property
    def name(self) -> str:
        """The law as written on the command line, e.g. ``calls:10+repeat:3``."""
        return "+".join(f"{signal}:{k}" for signal, k in self.parts)

    def stop(self, run: RunCost) -> int:
        """The turn after which the law stops ``run`` (its last turn when it never fires)."""
        n = run.steps
        turn = n
        for signal, k in self.parts:
            turn = min(turn, int(np.searchsorted(run.counts[signal], k, side="left")) + 1)
        return turn


def parse_law(text: str) -> Law:
    """A law from ``SIGNAL:K`` parts joined by ``+`` (``transfer`` alone means ``transfer:1``).

    Args:
        text: E.g. ``calls:10``, ``repeat:2``, ``errors:1+calls:12``.

    Returns:
        The law.

    Raises:
        SpecError: for an unknown signal or a threshold that is not an integer >= 1.
    """
    parts = []
    for part in text.strip().split("+"):
        signal, _, k = part.strip().partition(":")
        if signal not in SIGNALS:
            raise SpecError(f"law {text!r}: unknown signal {signal!r}; use {', '.join(SIGNALS)}")
        if not k and signal == "transfer":
            k = "1"
        if not k.isdigit() or int(k) < 1:
            raise SpecError(f"law {text!r}: {signal} needs a threshold >= 1, as {signal}:3")
        parts.append((signal, int(k)))
    return Law(tuple(parts))


def parse_laws(text: str) -> list[Law]:
    """Comma-separated laws (``parse_law``); SpecError on an empty list."""
    laws = [parse_law(t) for t in text.split(",") if t.strip()]
    if not laws:
        raise SpecError("--laws: give at least one law, e.g. calls:10,repeat:2")
    return laws


@dataclass(frozen=True, slots=True)
class LawResult:
    """What a law does to the recorded runs."""

    law: str
    successes: int  # recorded
    kept: int  # successes it keeps
    fired: int  # runs it stops before their last turn
    kept_share: Estimate  # of the recorded successes
    calls_saved: Estimate  # share of the failed runs' tool calls
    turns_saved: Estimate  # share of the failed runs' turns

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready fields."""
        return {
            "law": self.law,
            "successes": self.successes,
            "kept": self.kept,
            "fired": self.fired,
            "kept_share": self.kept_share.to_dict(),
            "calls_saved_on_failures": self.calls_saved.to_dict(),
            "turns_saved_on_failures": self.turns_saved.to_dict(),
        }


def task_index(runs: Sequence[RunCost]) -> tuple[IntArray, int]:
    """Each run's task as 0..G-1 (in order of first appearance) and G."""
    ids: dict[int, int] = {}
    index = np.array([ids.setdefault(r.task, len(ids)) for r in runs], dtype=np.int64)
    return index, len(ids)


def by_task(values: npt.NDArray[Any], index: IntArray, groups: int) -> npt.NDArray[np.float64]:
    """Per-task sums of per-run values (runs × columns -> groups × columns)."""
    v = np.asarray(values, float).reshape(len(values), -1)
    out = np.zeros((groups, v.shape[1]))
    np.add.at(out, index, v)
    return out


def evaluate(
    runs: Sequence[RunCost], laws: Sequence[Law], seed: int = 0, resamples: int = 2000
) -> list[LawResult]:
    """Replay every law on the runs, with task-bootstrap intervals (one set of resamples).

    Args:
        runs: The recorded runs (``load_costs``).
        laws: The laws.
        seed: The bootstrap's seed.
        resamples: The bootstrap's resamples.

    Returns:
        One result per law, in order.
    """
    index, groups = task_index(runs)
    counts = group_resample_counts(groups, np.random.default_rng(seed), resamples)
    success = np.array([r.success for r in runs])
    failure = ~success
    n_turns = np.array([r.steps for r in runs], float)
    n_calls = np.array([r.total("calls") for r in runs], float)
    out = []
    for law in laws:
        stops = [law.stop(r) for r in runs]
        kept = np.array([r.success and t >= r.decided_at for r, t in zip(runs, stops, strict=True)])
        calls_at = np.array(
            [r.counts["calls"][t - 1] if t else 0 for r, t in zip(runs, stops, strict=True)], float
        )
        turns_saved = (n_turns - np.array(stops, float)) * failure
        calls_saved = (n_calls - calls_at) * failure
        num = by_task(np.column_stack([kept, calls_saved, turns_saved]), index, groups)
        den = by_task(
            np.column_stack([success, n_calls * failure, n_turns * failure]), index, groups
        )
        share, calls, turns = ratio_estimates(num, den, counts)
        fired = sum(t < r.steps for r, t in zip(runs, stops, strict=True))
        out.append(
            LawResult(law.name, int(success.sum()), int(kept.sum()), fired, share, calls, turns)
        )
    return out
