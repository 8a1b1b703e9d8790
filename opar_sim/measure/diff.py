"""Two run directories side by side: per controller, B − A on the episodes they share.

Rows are paired by their episode key (controller, episode, trial); with
Reflexion attempts an episode is judged by its last attempt, as in
``summary.json``.  When the two runs share seed and task, episode i saw the
same world in both, so the differences are paired on common random numbers;
otherwise the pairs are only index-matched, and ``RunDiff.same_worlds`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.measure.stats import (
    Estimate,
    Proportion,
    discordant,
    mcnemar_exact,
    paired_interval,
    success_rate,
)
from opar_sim.rundir import RunDirError, check_run_dir, episode_key, iter_episodes, read_spec
from opar_sim.rundir.manifest import run_engine

Key = tuple[int, int]  # (episode, trial)
Rows = dict[Key, dict[str, Any]]  # one controller's episode rows by (episode, trial)
QUANTITIES = ("steps", "tokens", "replans")


@dataclass(frozen=True)
class ControllerDiff:
    """One controller in both runs: each run's success, and B − A on the common episodes."""

    controller: str
    n_a: int
    n_b: int
    common: int
    success_a: Proportion
    success_b: Proportion
    success_diff: Estimate  # B − A, success as 0/1, paired
    mcnemar_p: float
    diffs: dict[str, Estimate]  # quantity -> B − A mean per episode, paired
    means_a: dict[str, float]  # quantity -> A's mean over the common episodes
    means_b: dict[str, float]


@dataclass(frozen=True)
class RunDiff:
    """The comparison of run B against run A."""

    a: Path
    b: Path
    same_worlds: bool  # same seed and task: episode i is the same world in both
    controllers: list[ControllerDiff]
    only_a: list[str]  # controllers in A only
    only_b: list[str]


def _last_attempts(path: Path) -> dict[str, dict[Key, dict[str, Any]]]:
    """Controller -> (episode, trial) -> the row of its last attempt."""
    out: dict[str, dict[Key, dict[str, Any]]] = {}
    for row in iter_episodes(path):
        controller, episode, trial, _attempt = episode_key(row)
        out.setdefault(controller, {})[(episode, trial)] = row  # later attempts replace
    return out


def diff_runs(a: Path, b: Path, *, seed: int = 0) -> RunDiff:
    """Compare run directory ``b`` against ``a``, controller by controller.

    Args:
        a: The first (baseline) run directory.
        b: The second run directory.
        seed: The seed of the bootstrap intervals.

    Returns:
        Per shared controller: each run's success (Wilson) and the paired B − A
        differences in success (bootstrap interval, exact McNemar p), steps,
        tokens and REPLANs per episode, over the episodes both runs hold.
    """
    rows_a, rows_b = _last_attempts(check_run_dir(a)), _last_attempts(check_run_dir(b))
    engines = run_engine(a), run_engine(b)
    if engines[0] != engines[1]:
        raise RunDirError(
            f"A ran on the {engines[0]} engine and B on the {engines[1]} engine: episode i is "
            "not the same world in both, so there is nothing to pair (compare each run's "
            "summary instead, or rerun one on the other engine)"
        )
    spec_a, spec_b = read_spec(a), read_spec(b)
    same = (
        spec_a is not None
        and spec_b is not None
        and spec_a.seed == spec_b.seed
        and spec_a.task == spec_b.task
    )
    rng = np.random.default_rng(seed)
    shared = [name for name in rows_a if name in rows_b]
    diffs = [controller_diff(name, rows_a[name], rows_b[name], rng) for name in shared]
    return RunDiff(
        a,
        b,
        same,
        diffs,
        [n for n in rows_a if n not in rows_b],
        [n for n in rows_b if n not in rows_a],
    )


def controller_diff(
    name: str,
    ra: dict[Key, dict[str, Any]],
    rb: dict[Key, dict[str, Any]],
    rng: np.random.Generator,
) -> ControllerDiff:
    """B − A for one controller's episode rows, paired by (episode, trial) over those both hold.

    Args:
        name: What the row of the comparison is called (the controller, or B's law).
        ra: A's rows by (episode, trial).
        rb: B's rows by (episode, trial).
        rng: The generator of the bootstrap resamples.

    Returns:
        Each side's success (Wilson) and the paired differences in success (bootstrap
        interval, exact McNemar p), steps, tokens and REPLANs.
    """
    keys = sorted(set(ra) & set(rb))
    sa = [bool(ra[k]["success"]) for k in keys]
    sb = [bool(rb[k]["success"]) for k in keys]
    only_a, only_b = discordant(sa, sb)
    values = {
        q: ([float(ra[k][q]) for k in keys], [float(rb[k][q]) for k in keys]) for q in QUANTITIES
    }
    return ControllerDiff(
        controller=name,
        n_a=len(ra),
        n_b=len(rb),
        common=len(keys),
        success_a=success_rate(sum(sa), len(keys)),
        success_b=success_rate(sum(sb), len(keys)),
        success_diff=paired_interval([float(x) for x in sb], [float(x) for x in sa], rng),
        mcnemar_p=mcnemar_exact(only_b, only_a),
        diffs={q: paired_interval(vb, va, rng) for q, (va, vb) in values.items()},
        means_a={q: _mean(va) for q, (va, _) in values.items()},
        means_b={q: _mean(vb) for q, (_, vb) in values.items()},
    )


def against_reference(path: Path, reference: str, *, seed: int = 0) -> list[ControllerDiff]:
    """Every other law of one run against ``reference``, paired on the same episodes.

    The laws of one run share their worlds (common random numbers in both engines), so
    episode i pairs like with like: each row is that law minus the reference.

    Args:
        path: The run directory.
        reference: The law compared against (one of the run's).
        seed: The seed of the bootstrap intervals.

    Returns:
        One ``ControllerDiff`` per other law, in run order (A = the reference, B = the law).

    Raises:
        KeyError: when the run holds no law called ``reference``.
    """
    rows = _last_attempts(check_run_dir(path))
    if reference not in rows:
        raise KeyError(reference)
    rng = np.random.default_rng(seed)
    return [
        controller_diff(name, rows[reference], mine, rng)
        for name, mine in rows.items()
        if name != reference
    ]


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")
