"""Fit a heterogeneous simulated agent to a record of repeated trials; check it on held-out tasks.

The record is any run directory whose ``episodes.jsonl`` gives, per run, the
task (``episode``), the outcome (``success``), the tool calls and, when known,
the task's features (``task_features``): an imported real-agent record or a
simulated run.  The model is a spec with the simulated agent (e.g.
``experiments/tau_airline_model.toml``): every world of it has a latent shift u
of the logit of plan quality, u = μ + b·x + σ·z (``task_effect_mean``,
``task_effect_slope``, ``task_effect_sd``; x the world's feature, z ~ N(0, 1)),
shared by the world's trials.

Fitting by simulated maximum likelihood.  The simulator is run once on a grid
of shifts u_g for every feature value x of the record (the *table*): per cell,
the success rate P(x, u_g) and the tool calls of successes and of failures.  A
task i with feature x_i and runs (y_ij, t_ij) then has the likelihood

    L_i(θ) = ∫ φ(u; μ + b·x_i, σ) Π_j P^y (1 − P)^(1−y) f_y(t_ij | x_i, u) du,

integrated by Gauss–Hermite quadrature over the table (linear interpolation
between grid points; f_y the cell's tool-call distribution, smoothed towards
the feature's pooled one).  The table depends on the model, not on θ, so the
likelihood of any θ and any subset of tasks costs no further simulation: the
task folds of the cross-validation reuse it.

Validation on what the fit did not see.  The tasks are split into k folds by
task id; each fold is predicted by the model fitted on the other folds:
pass^1 … pass^K (K the fewest trials of a task, at most 4), the mean tool calls
of successes and of failures, the tool calls per run (a two-sample
Kolmogorov–Smirnov statistic against draws of the model) and the spread of
successes over tasks (the variance over tasks of their successes in K runs,
which task heterogeneity changes at a given pass^1), each against the held-out
record.  Every p-value comes from records simulated from the fitted model with
the same tasks and runs per task (``RESAMPLES`` of them): a task's runs share one
difficulty and one world, so they are not the independent draws a formula (e.g.
``ks_2samp``'s) assumes.  The verdict (``Validation.fits``), stated in
docs/calibration.md before the results: the pooled out-of-fold row (every task
predicted once by a model that never saw it) has all of pass^k and both means
inside the record's task-bootstrap 95 % intervals and neither KS nor spread
rejected at 5 %; and no test of any fold (8 a fold) is rejected by Holm's
correction over all folds' tests together at ``FOLD_ALPHA``.  The in-sample row
is never a pass.

A latent task length (``lengths``, opt-in).  Tasks of one write count differ
in how many lookups they need: with ``lengths`` every world also needs r further
lookups (``tool_chain``'s ``extra_reads``), r drawn per world from a negative
binomial π(r; m, k) (mean m, size k; ``extra_reads_mean``, ``extra_reads_size``),
independent of u and of the writes, shared by the world's trials.  The table then
has a cell per (feature, r on ``LENGTH_GRID``, u), and a task's likelihood sums
over r with the weights π(r) (the mass between two grid points shared linearly
between them, the tail beyond the last one on it) inside the integral over u:

    L_i(θ) = Σ_r π(r; m, k) ∫ φ(u; μ + b·x_i, σ) Π_j P^y (1 − P)^(1−y) f_y(t_ij | x_i, r, u) du.

Every prediction (pass^k, the means, the draws and the simulated records) mixes
over (r, u) with the same weights: the table's rows are the (r, u) pairs.

Task length (``shape``, opt-in).  With ``shape`` = ``actions`` the table has one
cell per (feature, ground-truth action count) of the record, the model's world
stretched to that count (``tool_chain``'s ``actions``), so that a task's tool
calls can follow its recorded length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.measure.stats import holm, pass_hat_k, require_scipy
from opar_sim.rundir import iter_episodes
from opar_sim.spec.build import build
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec, SpecError

U_GRID = tuple(float(u) for u in np.arange(-5.0, 7.01, 1.0))  # logit shifts of the table
HERMITE = np.polynomial.hermite.hermgauss(24)
SMOOTHING = 10.0  # pseudo-runs pulling a cell's tool-call pmf (~24 runs) to the feature's
MAX_K = 4
KS_ALPHA = 0.05
BOOTSTRAP = 2000
MODEL_DRAWS = 50  # model draws per recorded run for the KS test
TABLE_TRIALS = 4  # a table cell runs its episodes as worlds of this many trials each
RESAMPLES = 2000  # simulated records behind the parametric p-values (KS, spread, folds)
FOLD_ALPHA = 0.05  # family-wise level of the per-fold tests (Holm over folds x tests)
LENGTH_GRID = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 14)  # latent extra lookups r of the table
SPREAD = "spread of successes per task"
KS = "KS tool calls"


Key = float | tuple[float, float]
"""A table cell's task: its feature value, or (feature, length) when the table has a shape."""


@dataclass
class TaskRuns:
    """The recorded runs of one task: its feature, outcomes and tool calls (and its length)."""

    task: int
    feature: float
    success: np.ndarray
    tool_calls: np.ndarray
    length: float | None = None  # the record's shape feature (e.g. ground-truth actions)

    @property
    def key(self) -> Key:
        """The table cell this task is predicted from: its feature, and its length if any."""
        return self.feature if self.length is None else (self.feature, self.length)


@dataclass
class Record:
    """A record of repeated trials, task by task (see the module docstring)."""

    source: str
    controller: str
    feature: str
    tasks: list[TaskRuns]
    shape: str | None = None  # the feature the model's task length is matched to, if any

    @property
    def runs(self) -> int:
        """How many runs the record holds."""
        return sum(len(t.success) for t in self.tasks)

    def subset(self, ids: Sequence[int]) -> list[TaskRuns]:
        """The tasks at positions ``ids``."""
        return [self.tasks[i] for i in ids]


def load_record(
    path: str | Path, feature: str = "write_actions", shape: str | None = None
) -> Record:
    """Read a run directory's episodes as a record of repeated trials.

    Args:
        path: The run directory (its ``episodes.jsonl``).
        feature: The task feature the model's mean shift depends on (0 when a row has none).
        shape: A task feature the model's task length is matched to, task by task
            (e.g. ``actions``; 0 when a row has none), or None.

    Returns:
        The first controller's runs grouped by task, tasks in id order.

    Raises:
        SpecError: when the directory has no episodes (the CLI exits with 2).
    """
    p = Path(path)
    if not (p / "episodes.jsonl").is_file():
        raise SpecError(f"{p}: not a run directory (no episodes.jsonl)")
    rows = list(iter_episodes(p))  # a damaged line: RunDirError naming file, line and field
    if not rows:
        raise SpecError(f"{p}: no finished episodes in episodes.jsonl")
    controller = str(rows[0]["controller"])
    grouped: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        if row["controller"] == controller:
            grouped.setdefault(int(row["episode"]), []).append(row)
    tasks = []
    for task, runs in sorted(grouped.items()):
        features = runs[0].get("task_features") or {}
        tasks.append(
            TaskRuns(
                task,
                float(features.get(feature, 0.0)),
                np.array([bool(r["success"]) for r in runs]),
                np.array([int(r["tool_calls"]) for r in runs]),
                None if shape is None else float(features.get(shape, 0.0)),
            )
        )
    return Record(str(p), controller, feature, tasks, shape)


# -- the table: the simulator on a grid of shifts, per feature value -----------------------


@dataclass
class Table:
    """Simulated outcomes and tool calls per (feature value, latent length, grid shift) cell.

    The rows of a feature's arrays are the (length, shift) pairs, length-major: row
    ``l * len(u) + g`` is length ``lengths[l]`` at shift ``u[g]``.  A table without
    the latent length has the one length 0 (its rows are the shifts).
    """

    u: np.ndarray
    success: dict[Key, np.ndarray]  # cell -> (rows, episodes) bool
    calls: dict[Key, np.ndarray]  # cell -> (rows, episodes) int
    top: int  # the largest tool-call count the distributions cover
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(1))  # latent extra lookups

    @property
    def has_lengths(self) -> bool:
        """Whether the table has the latent length (more than one r)."""
        return len(self.lengths) > 1

    @property
    def rows(self) -> int:
        """The (length, shift) rows of every cell."""
        return len(self.lengths) * len(self.u)

    def rate(self, x: Key) -> np.ndarray:
        """P(success) per grid point for feature ``x``, kept off 0 and 1 by half a run."""
        s = self.success[x]
        e = s.shape[1]
        rate: np.ndarray = np.clip(s.mean(axis=1), 0.5 / e, 1 - 0.5 / e)
        return rate


def feature_changes(spec: ExperimentSpec, feature: str, x: float) -> dict[str, Any]:
    """The spec changes that make every world of the model's task have ``feature`` = ``x``.

    Args:
        spec: The model spec.
        feature: The feature's name.
        x: Its value.

    Returns:
        Dotted-path changes (``tool_chain``'s ``write_weights`` one-hot at ``x``).

    Raises:
        SpecError: when the model's task cannot be forced to that feature value.
    """
    if spec.task.name == "tool_chain" and feature == "write_actions":
        n = int(x)
        if n != x or n < 0 or n > 50:
            raise SpecError(f"write_actions {x} is not a count the model's task can make")
        weights = [0.0] * (n + 1)
        weights[n] = 1.0
        return {"task.params.write_weights": weights}
    raise SpecError(
        f"the model's task {spec.task.name!r} cannot be set to {feature} = {x:g}; "
        "use a model whose task has that feature (e.g. tool_chain for write_actions)"
    )


def shape_changes(spec: ExperimentSpec, shape: str, length: float) -> dict[str, Any]:
    """The spec changes that stretch the model's task to a recorded task's ``shape`` value.

    Args:
        spec: The model spec.
        shape: The feature matched (``actions``: the ground-truth action count).
        length: Its value for the task.

    Returns:
        Dotted-path changes (``tool_chain``'s ``actions``).

    Raises:
        SpecError: when the model's task has no such length.
    """
    if spec.task.name == "tool_chain" and shape == "actions":
        return {"task.params.actions": int(length)}
    raise SpecError(
        f"the model's task {spec.task.name!r} cannot be stretched to {shape} = {length:g}; "
        "use tool_chain with --shape actions"
    )


def length_changes(spec: ExperimentSpec, extra: int) -> dict[str, Any]:
    """The spec changes that give every world of the model's task ``extra`` latent lookups.

    Args:
        spec: The model spec.
        extra: The latent extra lookups r.

    Returns:
        Dotted-path changes (``tool_chain``'s ``extra_reads``).

    Raises:
        SpecError: when the model's task has no latent length.
    """
    if spec.task.name == "tool_chain":
        return {"task.params.extra_reads": int(extra)}
    raise SpecError(
        f"the model's task {spec.task.name!r} has no latent length; use tool_chain "
        "(extra_reads) or leave the task length out"
    )


def build_table(
    spec: ExperimentSpec,
    features: Sequence[Key],
    feature: str,
    episodes: int = 48,
    seed: int = 0,
    advance: Callable[[int], None] | None = None,
    shape: str | None = None,
    lengths: Sequence[int] | None = None,
) -> Table:
    """Run the model on every (feature value, latent length, grid shift) cell.

    Every cell runs ``episodes`` episodes as worlds of ``TABLE_TRIALS`` trials
    each (the trials of a world share it, as a recorded task's runs do), with the
    agent's shift fixed at the grid point.  Every cell has worlds of its own
    (seeds ``seed`` with episode numbers not shared with another cell): a
    simulated record drawn from the table must not meet the same world in two
    cells.

    Args:
        spec: The model spec (simulated agent; its task, controller and limits).
        features: The cells of the record (``TaskRuns.key``): feature values (a single 0
            when it has none), or (feature, length) pairs with ``shape``.
        feature: The feature's name.
        episodes: Episodes per cell.
        seed: The run seed of the cells' episodes.
        advance: Called with the episodes done after each cell (a progress bar).
        shape: The feature the pairs' lengths are of (``shape_changes``), or None.
        lengths: The latent extra lookups r of the table (``length_changes``; e.g.
            ``LENGTH_GRID``), or None: no latent length (the model's worlds as they are).

    Returns:
        The table.
    """
    if spec.agent.kind != "simulated":
        raise SpecError(f"the model must have a simulated agent, not {spec.agent.kind!r}")
    success: dict[Key, np.ndarray] = {}
    calls: dict[Key, np.ndarray] = {}
    varying = len(set(features)) > 1 or shape is not None
    worlds = -(-episodes // TABLE_TRIALS)
    cell = 0
    for x in features:
        base = spec
        if isinstance(x, tuple):
            if shape is None:
                raise SpecError("a table of (feature, length) cells needs the shape's name")
            changes = feature_changes(spec, feature, x[0]) | shape_changes(spec, shape, x[1])
            base = apply_changes(spec, changes, "table")
        elif varying:
            base = apply_changes(spec, feature_changes(spec, feature, x), "table")
        extras: list[int | None] = [None] if lengths is None else [int(r) for r in lengths]
        s = np.zeros((len(extras) * len(U_GRID), episodes), dtype=bool)
        c = np.zeros((len(extras) * len(U_GRID), episodes), dtype=np.int64)
        for row, (r, u) in enumerate((r, u) for r in extras for u in U_GRID):
            changes = {
                "agent.params.task_effect_mean": u,
                "agent.params.task_effect_slope": 0.0,
                "agent.params.task_effect_sd": 0.0,
            }
            if r is not None:
                changes |= length_changes(spec, r) | {"task.params.extra_reads_mean": 0.0}
            parts = build(apply_changes(base, changes, "table"))
            make_controller = parts.controllers[0][1]
            task, agent = parts.make_task(), parts.make_agent()
            for i in range(episodes):
                world, trial = divmod(i, TABLE_TRIALS)
                result = run_episode(
                    task,
                    agent,
                    make_controller(),
                    parts.limits,
                    episode_seed(seed, cell * worlds + world),
                    trial=trial + 1,
                )
                s[row, i] = result.success
                c[row, i] = result.cost.tool_calls
            cell += 1
            if advance is not None:
                advance(episodes)
        success[x], calls[x] = s, c
    top = int(max(int(c.max()) for c in calls.values()))
    grid = np.zeros(1) if lengths is None else np.array([float(r) for r in lengths])
    return Table(np.array(U_GRID), success, calls, top, grid)


# -- the likelihood ---------------------------------------------------------------------


def _pmf(counts: np.ndarray, top: int) -> np.ndarray:
    hist = np.bincount(np.clip(counts, 0, top), minlength=top + 1).astype(float)
    return hist


def cell_loglik(table: Table, tasks: Sequence[TaskRuns]) -> np.ndarray:
    """The log of Π_j P^y (1 − P)^(1−y) f_y(t_j) of every task at every grid point.

    Args:
        table: The simulated table.
        tasks: The tasks (their features must be in the table).

    Returns:
        The per-task, per-grid-point log-likelihoods.
    """
    top = max(table.top, max(int(t.tool_calls.max()) for t in tasks)) + 1
    cache: dict[Key, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    out = np.zeros((len(tasks), table.rows))
    grid = len(table.u)
    for i, t in enumerate(tasks):
        x = t.key
        if x not in cache:
            s, c = table.success[x], table.calls[x]
            logs = []
            for outcome in (True, False):
                mask = s == outcome
                cells = np.array([_pmf(c[g][mask[g]], top) for g in range(table.rows)])
                # smoothed towards the pooled pmf of the same length (all shifts)
                blocks = cells.reshape(len(table.lengths), grid, -1)
                pooled = blocks.sum(axis=1, keepdims=True)
                pooled = pooled + 1e-3 * pooled.sum(axis=2, keepdims=True) / (top + 1) + 1e-9
                pooled = np.repeat(pooled / pooled.sum(axis=2, keepdims=True), grid, axis=1)
                pooled = pooled.reshape(cells.shape)
                smooth = (cells + SMOOTHING * pooled) / (
                    cells.sum(axis=1, keepdims=True) + SMOOTHING
                )
                logs.append(np.log(smooth))
            cache[x] = (np.log(table.rate(x)), logs[0], logs[1])
        log_p, log_fs, log_ff = cache[x]
        log_q = np.log1p(-np.exp(log_p))
        calls = np.clip(t.tool_calls, 0, top)
        for y, tc in zip(t.success, calls, strict=True):
            out[i] += (log_p + log_fs[:, tc]) if y else (log_q + log_ff[:, tc])
    return out


def grid_weights(table: Table, mean: float | np.ndarray, sd: float) -> np.ndarray:
    """The weight of each grid point under N(mean, sd²), by Gauss–Hermite and interpolation.

    Args:
        table: The table (its grid).
        mean: The shift's mean, or an array of means (one per task).
        sd: Its spread (0: a point mass, interpolated).

    Returns:
        Weights over the grid summing to 1 (mass beyond the grid goes to its ends):
        shape (grid,) for one mean, (means, grid) for an array.
    """
    nodes, weights = HERMITE
    means = np.atleast_1d(np.asarray(mean, dtype=float))
    u = np.clip(means[:, None] + math.sqrt(2.0) * sd * nodes[None, :], table.u[0], table.u[-1])
    w = weights / math.sqrt(math.pi)
    step = float(table.u[1] - table.u[0])
    pos = (u - table.u[0]) / step
    lo = np.minimum(np.floor(pos).astype(int), len(table.u) - 1)
    hi = np.minimum(lo + 1, len(table.u) - 1)
    frac = pos - lo
    out = np.zeros((len(means), len(table.u)))
    rows = np.repeat(np.arange(len(means)), len(nodes))
    np.add.at(out, (rows, lo.ravel()), np.tile(w, len(means)) * (1 - frac).ravel())
    np.add.at(out, (rows, hi.ravel()), np.tile(w, len(means)) * frac.ravel())
    out /= out.sum(axis=1, keepdims=True)
    return out if np.ndim(mean) else out[0]


@dataclass(frozen=True)
class Effect:
    """The fitted task effect u = mean + slope · x + sd · z, and the latent length if fitted.

    ``length_mean`` and ``length_size`` are the negative binomial's mean m and size k
    of the latent extra lookups r (None: no latent length); with ``length_slope`` c
    the mean depends on the feature: m · exp(c · x) (None: not fitted, c = 0).
    """

    mean: float
    slope: float
    sd: float
    length_mean: float | None = None
    length_size: float | None = None
    length_slope: float | None = None

    def params(self) -> dict[str, float]:
        """As the simulated agent's knobs."""
        return {
            "task_effect_mean": round(self.mean, 4),
            "task_effect_slope": round(self.slope, 4),
            "task_effect_sd": round(self.sd, 4),
        }

    def task_params(self) -> dict[str, float]:
        """The latent length as the task's knobs (``tool_chain``'s); empty without it."""
        if self.length_mean is None or self.length_size is None:
            return {}
        out = {
            "extra_reads_mean": round(self.length_mean, 4),
            "extra_reads_size": round(self.length_size, 4),
        }
        if self.length_slope is not None:
            out["extra_reads_slope"] = round(self.length_slope, 4)
        return out

    def to_dict(self) -> dict[str, float]:
        """As a JSON-ready mapping (the length's entries only when it is fitted)."""
        out = {"mean": self.mean, "slope": self.slope, "sd": self.sd}
        if self.length_mean is not None and self.length_size is not None:
            out |= {"length_mean": self.length_mean, "length_size": self.length_size}
            if self.length_slope is not None:
                out["length_slope"] = self.length_slope
        return out


def length_weights(table: Table, effect: Effect, feature: float = 0.0) -> np.ndarray:
    """The weight π(r) of each of the table's latent lengths under the effect's negative binomial.

    The negative binomial (mean m, size k) is evaluated on the integers; an integer
    between two grid lengths gives its mass to both, linearly (so the grid's mean
    length is the distribution's as long as it lies inside the grid), and the tail
    beyond the last grid length goes to it.

    Args:
        table: The table (its ``lengths``).
        effect: The fitted effect; without a length, all weight on the first length.
        feature: The task's feature x (the mean is m · exp(c · x) with a ``length_slope``).

    Returns:
        Weights over ``table.lengths`` summing to 1.
    """
    grid = table.lengths
    out = np.zeros(len(grid))
    if not table.has_lengths or effect.length_mean is None or effect.length_size is None:
        out[0] = 1.0
        return out
    top = int(grid[-1])
    r = np.arange(top + 1)
    m = effect.length_mean * math.exp((effect.length_slope or 0.0) * feature)
    m, k = min(max(m, 1e-9), float(top)), effect.length_size
    log_p = (
        np.array([math.lgamma(v + k) - math.lgamma(k) - math.lgamma(v + 1) for v in r])
        + k * math.log(k / (k + m))
        + r * math.log(m / (k + m))
    )
    pmf = np.exp(log_p)
    pmf[-1] += max(0.0, 1.0 - pmf.sum())  # the tail beyond the grid's last length
    hi = np.clip(np.searchsorted(grid, r, side="left"), 0, len(grid) - 1)
    lo = np.where(grid[hi] == r, hi, hi - 1)
    span = np.where(hi > lo, grid[hi] - grid[lo], 1.0)
    frac = np.where(hi > lo, (r - grid[lo]) / span, 0.0)
    np.add.at(out, lo, pmf * (1 - frac))
    np.add.at(out, hi, pmf * frac)
    weights: np.ndarray = out / out.sum()
    return weights


def cell_weights(table: Table, features: float | np.ndarray, effect: Effect) -> np.ndarray:
    """The weight of each (length, shift) row of the table for tasks with these features.

    Args:
        table: The table.
        features: A task's feature value, or an array of them (one per task).
        effect: The fitted effect (shift and, if any, latent length).

    Returns:
        π(r) · w(u) over the rows (length-major, as ``Table``): shape (rows,) for one
        feature value, (tasks, rows) for an array.
    """
    x = np.asarray(features, dtype=float)
    w = np.atleast_2d(grid_weights(table, effect.mean + effect.slope * x, effect.sd))
    cache = {v: length_weights(table, effect, v) for v in {float(v) for v in np.atleast_1d(x)}}
    pi = np.stack([cache[float(v)] for v in np.atleast_1d(x)])  # (tasks, lengths)
    joint: np.ndarray = (pi[:, :, None] * w[:, None, :]).reshape(w.shape[0], -1)
    return joint if np.ndim(x) else joint[0]


def loglik(table: Table, tasks: Sequence[TaskRuns], ll: np.ndarray, effect: Effect) -> float:
    """The log-likelihood of ``tasks`` (their ``cell_loglik`` rows ``ll``) under ``effect``."""
    x = np.array([t.feature for t in tasks])
    w = cell_weights(table, x, effect)
    top = ll.max(axis=1, keepdims=True)
    inner = np.maximum((w * np.exp(ll - top)).sum(axis=1), 1e-300)
    return float((top[:, 0] + np.log(inner)).sum())


def fit_effect(
    table: Table,
    tasks: Sequence[TaskRuns],
    ll: np.ndarray,
    homogeneous: bool = False,
    length_slope: bool = False,
) -> Effect:
    """The maximum-likelihood task effect (μ, b, σ); with ``homogeneous``, b = σ = 0.

    A table with the latent length also fits its negative binomial's mean and size
    (m, k), whatever ``homogeneous`` says (it concerns the shift), and with
    ``length_slope`` the mean's dependence on the feature, m · exp(c · x).

    Args:
        table: The simulated table.
        tasks: The tasks fitted.
        ll: Their ``cell_loglik`` rows.
        homogeneous: Fit one shift for every task (no feature effect, no spread).
        length_slope: Also fit the latent length's dependence on the feature (a table
            with lengths, tasks of more than one feature value).

    Returns:
        The fitted effect.
    """
    require_scipy()
    from scipy.optimize import minimize

    varying = len({t.feature for t in tasks}) > 1
    lo, hi = float(table.u[0]), float(table.u[-1])

    lengths = table.has_lengths
    by_feature = lengths and length_slope and varying
    top = float(table.lengths[-1])

    def unpack(v: np.ndarray) -> Effect:
        length: tuple[float | None, float | None, float | None] = (None, None, None)
        if by_feature:  # the last: the slope c of log m
            length = (None, None, float(np.clip(v[-1], -3.0, 3.0)))
            v = v[:-1]
        if lengths:  # then log m and log k
            m = float(np.clip(math.exp(np.clip(v[-2], -12.0, 5.0)), 1e-4, top))
            k = float(np.clip(math.exp(np.clip(v[-1], -8.0, 8.0)), 0.05, 200.0))
            length = (m, k, length[2])
            v = v[:-2]
        mean = float(np.clip(v[0], lo, hi))
        if homogeneous:
            return Effect(mean, 0.0, 0.0, *length)
        slope = float(np.clip(v[1], -5.0, 5.0)) if varying else 0.0
        return Effect(mean, slope, float(np.clip(math.exp(v[-1]), 0.0, 8.0)), *length)

    def nll(v: np.ndarray) -> float:
        return -loglik(table, tasks, ll, unpack(v))

    best: Any = None
    # the latent length's likelihood has several modes (a wide shift or a wide length):
    # with it, every start of the shift's mean is tried with a narrow and a wide spread
    spreads = (1.0, 3.0) if lengths and not homogeneous else (1.0,)
    for start_mean, start_sd in ((m, s) for m in (-1.0, 1.0, 3.0) for s in spreads):
        if homogeneous:
            start = np.array([start_mean])
        elif varying:
            start = np.array([start_mean, -0.5, math.log(start_sd)])
        else:
            start = np.array([start_mean, math.log(start_sd)])
        options: dict[str, Any] = {"xatol": 1e-3, "fatol": 1e-4}
        if lengths:  # log m, log k from 2 and 1, and a simplex of steps 0.5 (not scipy's 5 %)
            start = np.concatenate([start, [math.log(2.0), 0.0] + ([0.0] if by_feature else [])])
            options["initial_simplex"] = np.vstack([start, start + 0.5 * np.eye(len(start))])
            options["maxiter"] = 400 * len(start)
        res = minimize(nll, start, method="Nelder-Mead", options=options)
        if best is None or res.fun < best.fun:
            best = res
    return unpack(best.x)


# -- predictions and the record's intervals -------------------------------------------------


@dataclass
class Stats:
    """pass^1..pass^K, mean tool calls of successes and failures, of a set of tasks."""

    pass_k: list[float]
    success_calls: float
    failure_calls: float


def predict(table: Table, tasks: Sequence[TaskRuns], effect: Effect, ks: int) -> Stats:
    """The model's pass^k and mean tool calls on ``tasks`` (their features and run counts).

    pass^k of a grid cell is the unbiased C(s, k) / C(E, k) of its E episodes; a
    task's is the weighted mean over the grid, and the set's the mean over tasks.
    Mean tool calls weight each task by its number of runs.
    """
    pk = np.zeros(ks)
    num_s = den_s = num_f = den_f = 0.0
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        s, c = table.success[t.key], table.calls[t.key]
        e = s.shape[1]
        wins = s.sum(axis=1)
        for k in range(1, ks + 1):
            cell = np.array([math.comb(int(n), k) for n in wins]) / math.comb(e, k)
            pk[k - 1] += float(np.dot(w, cell))
        n = len(t.success)
        num_s += n * float(np.dot(w, (s * c).sum(axis=1) / e))
        den_s += n * float(np.dot(w, wins / e))
        num_f += n * float(np.dot(w, (~s * c).sum(axis=1) / e))
        den_f += n * float(np.dot(w, (e - wins) / e))
    return Stats(
        list(pk / len(tasks)),
        num_s / den_s if den_s else math.nan,
        num_f / den_f if den_f else math.nan,
    )


def _worlds(table: Table, x: Key, half: int) -> np.ndarray:
    """The episode columns of the table's worlds of one half (0: even worlds, 1: odd)."""
    worlds = table.calls[x].shape[1] // TABLE_TRIALS
    chosen = np.arange(half, worlds, 2) if worlds > 1 else np.arange(worlds)
    return (chosen[:, None] * TABLE_TRIALS + np.arange(TABLE_TRIALS)[None, :]).ravel()


def model_draws(
    table: Table, tasks: Sequence[TaskRuns], effect: Effect, rng: np.random.Generator
) -> np.ndarray:
    """Tool calls of ``MODEL_DRAWS`` model runs per recorded run, from the even worlds."""
    out = []
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        cols = _worlds(table, t.key, 0)
        n = MODEL_DRAWS * len(t.success)
        g = rng.choice(len(w), size=n, p=w)
        e = cols[rng.integers(len(cols), size=n)]
        out.append(table.calls[t.key][g, e])
    return np.concatenate(out)


def simulated_records(
    table: Table,
    tasks: Sequence[TaskRuns],
    effect: Effect,
    rng: np.random.Generator,
    count: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Tool calls and successes of ``count`` records like ``tasks`` from the model.

    Each task of a record draws one grid shift and one simulated world of that
    cell, from the odd worlds (the draws ``model_draws`` compares with are the
    even ones, so a simulated record differs from them as a fresh record does),
    and takes its runs from that world's trials: a task's runs share their world
    and difficulty, as recorded runs do.

    Returns:
        (tool calls, successes), each of shape (count, runs), the runs task by task
        in the order of ``tasks``.
    """
    calls, wins = [], []
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        worlds = _worlds(table, t.key, 1).reshape(-1, TABLE_TRIALS)[:, 0]
        g = rng.choice(len(w), size=count, p=w)
        base = worlds[rng.integers(len(worlds), size=count)]
        n = len(t.success)
        idx = base[:, None] + (np.arange(n) % TABLE_TRIALS)[None, :]
        calls.append(table.calls[t.key][g[:, None], idx])
        wins.append(table.success[t.key][g[:, None], idx])
    return np.concatenate(calls, axis=1), np.concatenate(wins, axis=1)


def success_histogram(success: np.ndarray, sizes: Sequence[int], ks: int) -> np.ndarray:
    """Tasks by successes in their first ``ks`` runs (0 … ks), per record.

    Args:
        success: Successes, shape (records, runs), the runs task by task.
        sizes: The runs of each task, in order.
        ks: The runs counted per task (the fewest runs of a task, at most 4).

    Returns:
        Counts of tasks, shape (records, ks + 1).
    """
    rows = np.atleast_2d(success)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    wins = np.stack([rows[:, a : a + ks].sum(axis=1) for a in starts], axis=1)  # (records, tasks)
    hist = np.zeros((rows.shape[0], ks + 1))
    for c in range(ks + 1):
        hist[:, c] = (wins == c).sum(axis=1)
    return hist


def predicted_histogram(
    table: Table, tasks: Sequence[TaskRuns], effect: Effect, ks: int
) -> np.ndarray:
    """The model's expected number of tasks with 0 … ``ks`` successes in their first ks runs.

    A task's chances are those of the table's worlds (``TABLE_TRIALS`` trials each,
    the first ks counted) at each grid shift, weighted by the task effect.
    """
    out = np.zeros(ks + 1)
    for t in tasks:
        w = cell_weights(table, t.feature, effect)
        s = table.success[t.key]
        worlds = s.reshape(s.shape[0], -1, TABLE_TRIALS)[:, :, :ks].sum(axis=2)  # (grid, worlds)
        cells = np.stack([(worlds == c).mean(axis=1) for c in range(ks + 1)], axis=1)
        out += w @ cells
    return out


def record_statistics(
    calls: np.ndarray,
    success: np.ndarray,
    sizes: Sequence[int],
    ks: int,
    draws: np.ndarray,
) -> dict[str, np.ndarray]:
    """The tested statistics of each record (rows): pass^k, mean lengths, KS D, spread.

    Args:
        calls: Tool calls, shape (records, runs), the runs task by task.
        success: Successes, the same shape.
        sizes: The runs of each task, in order.
        ks: The largest k of pass^k.
        draws: The model's tool calls the KS distance is measured against.

    Returns:
        Name -> one value per record (a mean over no successes is NaN).
    """
    c = np.atleast_2d(calls)
    y = np.atleast_2d(success).astype(bool)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)
    out: dict[str, np.ndarray] = {}
    for k in range(1, ks + 1):
        scores = []
        for a, n in zip(starts, sizes, strict=True):
            wins = y[:, a : a + n].sum(axis=1)
            table = np.array([math.comb(int(w), k) for w in range(n + 1)]) / math.comb(n, k)
            scores.append(table[wins])
        out[f"pass^{k}"] = np.mean(scores, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["success tool calls"] = (c * y).sum(axis=1) / y.sum(axis=1)
        out["failure tool calls"] = (c * ~y).sum(axis=1) / (~y).sum(axis=1)
    out[KS] = ks_distances(c, draws)
    out[SPREAD] = spread(success_histogram(y, sizes, ks))
    return out


def spread(histogram: np.ndarray) -> np.ndarray:
    """The variance over tasks of their successes, from tasks by successes (rows: records)."""
    h = np.atleast_2d(histogram)
    c = np.arange(h.shape[1])
    n = h.sum(axis=1)
    mean = (h * c).sum(axis=1) / n
    variance: np.ndarray = (h * c**2).sum(axis=1) / n - mean**2
    return variance


ONE_SIDED = (KS,)  # a distance: only too far is a misfit


def parametric_pvalues(
    observed: dict[str, np.ndarray], simulated: dict[str, np.ndarray]
) -> dict[str, float]:
    """Each observed statistic ranked among the simulated records' (a Monte Carlo p-value).

    Two-sided for pass^k, the mean lengths and the spread (2 · the smaller tail, at
    most 1), one-sided for the KS distance (``ONE_SIDED``); a simulated record whose statistic
    is undefined (a mean over no successes) is left out; an undefined observed one
    gives p = 1 (nothing to test).
    """
    out = {}
    for name, values in observed.items():
        obs = float(values[0])
        sims = simulated[name][np.isfinite(simulated[name])]
        if not math.isfinite(obs) or not sims.size:
            out[name] = 1.0
            continue
        r = sims.size
        upper = (1 + int((sims >= obs - 1e-12).sum())) / (r + 1)
        if name in ONE_SIDED:
            out[name] = upper
        else:
            lower = (1 + int((sims <= obs + 1e-12).sum())) / (r + 1)
            out[name] = min(1.0, 2 * min(lower, upper))
    return out


def ks_distances(samples: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The two-sample Kolmogorov–Smirnov D of each row of ``samples`` against ``reference``.

    Tool calls are counts, so D is the largest gap of the two empirical CDFs over
    the integers, as ``scipy.stats.ks_2samp`` computes it.

    Args:
        samples: Non-negative integer samples, one per row.
        reference: The non-negative integer sample they are compared with.

    Returns:
        D per row.
    """
    rows = np.atleast_2d(samples).astype(np.int64)
    top = int(max(rows.max(), reference.max())) + 1
    ref = np.cumsum(np.bincount(reference, minlength=top)) / len(reference)
    counts = np.zeros((rows.shape[0], top))
    np.add.at(counts, (np.repeat(np.arange(rows.shape[0]), rows.shape[1]), rows.ravel()), 1.0)
    cdf = np.cumsum(counts, axis=1) / rows.shape[1]
    distances: np.ndarray = np.abs(cdf - ref[None, :]).max(axis=1)
    return distances


def record_stats(tasks: Sequence[TaskRuns], ks: int) -> Stats:
    """The record's pass^k (τ-bench's estimator) and mean tool calls of successes and failures."""
    attempts = {i: [bool(y) for y in t.success] for i, t in enumerate(tasks)}
    calls = np.concatenate([t.tool_calls for t in tasks])
    wins = np.concatenate([t.success for t in tasks])
    return Stats(
        [pass_hat_k(attempts, k) for k in range(1, ks + 1)],
        float(calls[wins].mean()) if wins.any() else math.nan,
        float(calls[~wins].mean()) if (~wins).any() else math.nan,
    )


def task_bootstrap(
    tasks: Sequence[TaskRuns], ks: int, rng: np.random.Generator, resamples: int = BOOTSTRAP
) -> tuple[Stats, Stats]:
    """95 % percentile intervals of ``record_stats`` from resampling whole tasks.

    Returns:
        (low, high) as two ``Stats``; a mean over no successes (or failures) is NaN.
    """
    n = len(tasks)
    scores = np.array(
        [
            [pass_hat_k({0: [bool(y) for y in t.success]}, k) for k in range(1, ks + 1)]
            for t in tasks
        ]
    )
    sums = np.array(
        [
            [
                t.tool_calls[t.success].sum(),
                t.success.sum(),
                t.tool_calls[~t.success].sum(),
                (~t.success).sum(),
            ]
            for t in tasks
        ],
        dtype=float,
    )
    idx = rng.integers(0, n, size=(resamples, n))
    pk = scores[idx].mean(axis=1)  # (resamples, ks)
    s = sums[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        succ = s[:, 0] / s[:, 1]
        fail = s[:, 2] / s[:, 3]

    def q(a: np.ndarray, p: float) -> float:
        a = a[np.isfinite(a)]
        return float(np.quantile(a, p)) if a.size else math.nan

    low = Stats([q(pk[:, k], 0.025) for k in range(ks)], q(succ, 0.025), q(fail, 0.025))
    high = Stats([q(pk[:, k], 0.975) for k in range(ks)], q(succ, 0.975), q(fail, 0.975))
    return low, high


# -- the held-out check -------------------------------------------------------------------


@dataclass
class Check:
    """The model's predictions on a set of tasks against the record's intervals there.

    ``failures`` is the interval verdict (the pooled row's); ``pvalues`` are the
    parametric p-values of the same statistics (held-out record ranked among records
    simulated from the model), and ``adjusted`` their Holm adjustment over every
    fold's tests, set by ``validate`` on the fold rows, whose verdict is ``rejected``.
    """

    label: str
    tasks: int
    runs: int
    predicted: Stats
    recorded: Stats
    low: Stats
    high: Stats
    ks_statistic: float
    ks_pvalue: float
    held_out: bool = True
    ks_pvalue_independent: float = math.nan  # ks_2samp's own, as if every run were independent
    spread_recorded: list[float] = field(default_factory=list)  # tasks by successes 0..K
    spread_expected: list[float] = field(default_factory=list)
    spread_pvalue: float = math.nan
    pvalues: dict[str, float] = field(default_factory=dict)
    adjusted: dict[str, float] = field(default_factory=dict)

    def failures(self) -> list[str]:
        """The checks that failed at 5 % each (intervals, KS, spread); empty: all passed."""
        bad = []
        for k, (p, lo, hi) in enumerate(
            zip(self.predicted.pass_k, self.low.pass_k, self.high.pass_k, strict=True), 1
        ):
            if not lo <= p <= hi:
                bad.append(f"pass^{k}")
        for name, p, lo, hi in (
            (
                "success tool calls",
                self.predicted.success_calls,
                self.low.success_calls,
                self.high.success_calls,
            ),
            (
                "failure tool calls",
                self.predicted.failure_calls,
                self.low.failure_calls,
                self.high.failure_calls,
            ),
        ):
            if math.isfinite(lo) and not lo <= p <= hi:
                bad.append(name)
        if self.ks_pvalue < KS_ALPHA:
            bad.append(KS)
        if self.spread_pvalue < KS_ALPHA:
            bad.append(SPREAD)
        return bad

    def rejected(self, alpha: float = FOLD_ALPHA) -> list[str]:
        """The tests rejected after Holm's adjustment over all folds (a fold row's verdict)."""
        return [name for name, p in self.adjusted.items() if p < alpha]

    def to_dict(self) -> dict[str, Any]:
        """The check as a JSON-ready mapping."""
        return {
            "label": self.label,
            "held_out": self.held_out,
            "tasks": self.tasks,
            "runs": self.runs,
            "predicted": vars(self.predicted),
            "recorded": vars(self.recorded),
            "ci95_low": vars(self.low),
            "ci95_high": vars(self.high),
            "ks_statistic": self.ks_statistic,
            "ks_pvalue": self.ks_pvalue,
            "ks_pvalue_independent_runs": self.ks_pvalue_independent,
            "spread_recorded": self.spread_recorded,
            "spread_expected": self.spread_expected,
            "spread_pvalue": self.spread_pvalue,
            "parametric_pvalues": self.pvalues,
            "holm_adjusted": self.adjusted,
            "failed": self.failures(),
            "rejected": self.rejected(),
        }


def _check(
    label: str,
    parts: Sequence[tuple[Sequence[TaskRuns], Fitted]],
    ks: int,
    rng: np.random.Generator,
    held_out: bool = True,
) -> Check:
    """Check the predictions of each (tasks, fitted model) part, pooled, against those tasks."""
    require_scipy()
    from scipy.stats import ks_2samp

    tasks = [t for group, _ in parts for t in group]
    preds = [predict(f.table, group, f.effect, ks) for group, f in parts]
    weights = [len(group) for group, _ in parts]
    runs = [sum(len(t.success) for t in group) for group, _ in parts]
    pooled = Stats(
        [float(np.average([p.pass_k[k] for p in preds], weights=weights)) for k in range(ks)],
        _nanaverage([p.success_calls for p in preds], runs),
        _nanaverage([p.failure_calls for p in preds], runs),
    )
    draws = np.concatenate([model_draws(f.table, group, f.effect, rng) for group, f in parts])
    recorded = np.concatenate([t.tool_calls for t in tasks])
    wins = np.concatenate([t.success for t in tasks])
    sizes = [len(t.success) for t in tasks]
    expected = sum(
        (predicted_histogram(f.table, group, f.effect, ks) for group, f in parts),
        np.zeros(ks + 1),
    )
    test = ks_2samp(recorded, draws)
    # the runs of a task are not independent (one difficulty, one world): every p-value
    # comes from records simulated with the same tasks and runs, not from a formula
    fakes = [simulated_records(f.table, g, f.effect, rng, RESAMPLES) for g, f in parts]
    fake_calls = np.concatenate([c for c, _ in fakes], axis=1)
    fake_wins = np.concatenate([y for _, y in fakes], axis=1)
    observed = record_statistics(recorded[None, :], wins[None, :], sizes, ks, draws)
    simulated = record_statistics(fake_calls, fake_wins, sizes, ks, draws)
    pvalues = parametric_pvalues(observed, simulated)
    low, high = task_bootstrap(tasks, ks, rng)
    return Check(
        label,
        len(tasks),
        len(recorded),
        pooled,
        record_stats(tasks, ks),
        low,
        high,
        float(test.statistic),
        pvalues[KS],
        held_out,
        float(test.pvalue),
        [float(v) for v in success_histogram(wins[None, :], sizes, ks)[0]],
        [float(v) for v in expected],
        pvalues[SPREAD],
        pvalues,
    )


def _nanaverage(values: list[float], weights: list[int]) -> float:
    v = np.array(values, dtype=float)
    w = np.array(weights, dtype=float)
    keep = np.isfinite(v)
    return float(np.average(v[keep], weights=w[keep])) if keep.any() else math.nan


def folds_by_task(n_tasks: int, k: int, seed: int) -> list[list[int]]:
    """The k folds of task positions: shuffled with ``seed``, then dealt round-robin."""
    order = np.random.default_rng(seed).permutation(n_tasks)
    return [sorted(int(i) for i in order[f::k]) for f in range(k)]


@dataclass
class Fitted:
    """A fitted model: which structure (table) and the task effect on it, with its likelihood."""

    structure: str
    table: Table
    effect: Effect
    loglik: float


def fit_structures(
    tables: Sequence[tuple[str, Table]],
    lls: Sequence[np.ndarray],
    tasks: Sequence[TaskRuns],
    rows: Sequence[int],
    homogeneous: bool,
    length_slope: bool = False,
) -> Fitted:
    """The maximum-likelihood structure and task effect for the tasks at ``rows``.

    Args:
        tables: (label, table) per model structure.
        lls: Each table's ``cell_loglik`` of every task of the record.
        tasks: The tasks at ``rows``.
        rows: Their positions in the record (rows of ``lls``).
        homogeneous: Fit one shift for every task.
        length_slope: Fit the latent length's dependence on the feature (``fit_effect``).

    Returns:
        The best structure with its fitted effect.
    """
    best: Fitted | None = None
    for (label, table), ll in zip(tables, lls, strict=True):
        effect = fit_effect(table, tasks, ll[rows], homogeneous, length_slope)
        value = loglik(table, tasks, ll[rows], effect)
        if best is None or value > best.loglik:
            best = Fitted(label, table, effect, value)
    assert best is not None
    return best


@dataclass
class Validation:
    """The fit on all tasks, the held-out folds, their pooled check and the in-sample one."""

    fitted: Fitted
    folds: list[Check]
    fold_fits: list[Fitted]
    pooled: Check
    in_sample: Check
    homogeneous: bool
    structures: list[str] = field(default_factory=list)

    @property
    def effect(self) -> Effect:
        """The task effect fitted on all tasks."""
        return self.fitted.effect

    @property
    def fits(self) -> bool:
        """The stated verdict: the pooled held-out row passes and no fold test is rejected.

        The pooled row passes every check at 5 % (``Check.failures``); the folds'
        tests, all of them together, are Holm-adjusted and none may fall below
        ``FOLD_ALPHA`` (``Check.rejected``).  The in-sample check never counts.
        """
        return not self.failures()

    def failures(self) -> list[str]:
        """What failed: the pooled row's checks, then each fold's rejected tests, named."""
        bad = [f"pooled {name}" for name in self.pooled.failures()]
        for c in self.folds:
            bad += [f"{c.label} {name}" for name in c.rejected()]
        return bad

    def to_dict(self) -> dict[str, Any]:
        """The validation as a JSON-ready mapping."""
        return {
            "fits": self.fits,
            "failed": self.failures(),
            "fold_alpha_holm": FOLD_ALPHA,
            "homogeneous": self.homogeneous,
            "structures": self.structures,
            "structure": self.fitted.structure,
            "effect": self.effect.to_dict(),
            "loglik": self.fitted.loglik,
            "pooled_held_out": self.pooled.to_dict(),
            "folds": [
                c.to_dict() | {"structure": f.structure, "effect": f.effect.to_dict()}
                for c, f in zip(self.folds, self.fold_fits, strict=True)
            ],
            "in_sample": self.in_sample.to_dict(),
        }


def validate(
    record: Record,
    tables: Table | Sequence[tuple[str, Table]],
    folds: int = 5,
    seed: int = 0,
    homogeneous: bool = False,
    length_slope: bool = False,
) -> Validation:
    """Fit on all tasks, and fit-and-predict each task fold on the others (module docstring).

    With several tables (model structures, e.g. shares of wrong writes), each
    fit also picks the structure of highest likelihood, on its training tasks only.

    Args:
        record: The record.
        tables: The model's table (``build_table`` on the record's feature values), or
            (label, table) per structure.
        folds: How many task folds (at most the number of tasks, at least 2).
        seed: Seeds the fold split, the bootstrap and the model draws.
        homogeneous: Fit one shift for every task (a model without heterogeneity).
        length_slope: With a table of latent lengths, fit their mean's dependence on the
            feature too.

    Returns:
        The validation; ``fits`` is its verdict.
    """
    n = len(record.tasks)
    if n < 2:
        raise SpecError(f"{record.source}: cross-validation needs at least 2 tasks, found {n}")
    named = [("model", tables)] if isinstance(tables, Table) else list(tables)
    k = max(2, min(folds, n))
    ks = min(MAX_K, min(len(t.success) for t in record.tasks))
    rng = np.random.default_rng(seed)
    lls = [cell_loglik(table, record.tasks) for _, table in named]
    fitted = fit_structures(named, lls, record.tasks, list(range(n)), homogeneous, length_slope)
    checks, fits, parts = [], [], []
    for f, held in enumerate(folds_by_task(n, k, seed)):
        train = [i for i in range(n) if i not in set(held)]
        fold_fit = fit_structures(
            named, lls, record.subset(train), train, homogeneous, length_slope
        )
        part = (record.subset(held), fold_fit)
        checks.append(_check(f"fold {f + 1}", [part], ks, rng))
        fits.append(fold_fit)
        parts.append(part)
    adjusted = holm([p for c in checks for p in c.pvalues.values()])
    for i, c in enumerate(checks):
        m = len(c.pvalues)
        c.adjusted = dict(zip(c.pvalues, adjusted[i * m : (i + 1) * m], strict=True))
    pooled = _check("held-out, pooled", parts, ks, rng)
    in_sample = _check("in-sample", [(record.tasks, fitted)], ks, rng, held_out=False)
    return Validation(
        fitted, checks, fits, pooled, in_sample, homogeneous, [label for label, _ in named]
    )


def table_cells(
    record: Record, episodes: int, lengths: Sequence[int] | None = None
) -> tuple[list[Key], int]:
    """The cells (``TaskRuns.key``) the table needs and the episodes it will run."""
    features: list[Key] = sorted({t.key for t in record.tasks})
    per_feature = len(U_GRID) * (1 if lengths is None else len(lengths))
    return features, len(features) * per_feature * episodes
