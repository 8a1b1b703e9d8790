"""The Bayes-optimal Reflect law for the simulated noisy expert (docs/bayes.md).

The law plans with a small POMDP of the loop, built from the spec's own
parameters (``ModelInfo``: the agent's knobs, the task's tool faults, the
limits and the tuner's objective), and solves it once per parameter set by
backward induction; each Reflect then looks the decision up.

The model
    *Plan quality.*  Each plan has a hidden quality q: the first plan's is
    drawn from Beta(``plan_alpha``, ``plan_beta``) clipped to [0.02, 0.98], a
    replan's from the same prior shifted by ``critique_gain`` with the chance
    ``p_right`` that the critique was right (|bias + noise| ≤ tolerance),
    clipped again.  The prior is discretised on ``quality_points`` values, so
    the posterior given the productive (a) and unproductive (b) steps since
    the last plan — the Beta posterior of the conjugate case — is exact for
    that discrete prior.
    *Steps.*  A step fails (tool failure or timeout, seen as δ_act ≈ 0.1) with
    the chance ``fail`` derived from the task's tool parameters, and then says
    nothing about q; otherwise it is productive (δ_act ≥ ``productive_act``)
    with the chance ``productive_base`` + ``productive_gain``·max(floor, q·d),
    d the context decay at the step's context size, modelled from the agent's
    token knobs (base 0, gain 1: productive exactly when the step is the
    expert's; flight_booking's fit on tuning seed 100 is 0.37 + 0.35·q).
    *Progress.*  The task needs ``stages`` productive steps; m, the productive
    steps seen (capped at ``stages``), is observed.  When m reaches ``stages``
    the task *looks complete* (Z = 1: the agent sees the best flight booked,
    right payment) with the chance ρ(q_e) = ``rho_base`` + ``rho_gain``·q_e,
    averaged over the plan's posterior (q_e: the effective quality at that
    step); from then on the hidden bit Z is tracked from the δ_task readings:
    Z = 1 reads N(1 + bias, noise), Z = 0 reads N(``incomplete_level`` + bias,
    √(noise² + ``incomplete_spread``²)), both clipped to [0, 1] and read in
    ``reading_bins`` equal bins plus one bin each for exactly 0 and exactly 1
    (the clipped masses).  At ``stages`` the plan is remembered by the class of
    its posterior mean on entry (``quality_classes`` classes; a REPLAN there
    moves to the replan prior's class): while Z = 0 a non-failed step makes it
    look complete with the chance ``done_base`` + ``done_gain``·q_e, looks
    productive without it with the chance ``spurious``, and while Z = 1 a
    non-failed step undoes it (a cancel) with the chance ``undo_base`` +
    ``undo_gain``·q_e (q_e of the class, decayed, floored; all clipped).  A task
    that looks complete is complete with the chance ``kappa_base`` (the best
    flight can sit on an unread page).
    *Limits and objective.*  At most ``max_steps`` steps; a step is not started
    when the loop's worst-case token check would fail (modelled from the
    agent's token knobs); the objective is the tuner's per episode:
    failure·(1 − success) + tokens·(tokens spent) + replan_rate·replans/steps.

The solution
    Below ``stages`` the belief is (t, replans, m, a, b), all observed, and
    the values are arrays; at ``stages`` the belief is P(Z = 1) and the plan's
    class, and the value of each (t, replans, class) is a set of lines in
    P(Z = 1) (1-D alpha vectors; exact envelopes with ``belief_points`` = 0,
    point-based backups on that many beliefs otherwise).  The value is the
    optimum of the model with its reading bins, and
    ``tests/controllers/test_bayes.py`` checks it against an exhaustive search
    over the history tree.  Solved once per model and cached in-process.

What it covers and what it approximates (measured in docs/bayes.md)
    Covered: the plan-quality prior and the critique gain, tool failures and
    timeouts, context decay and its quality floor (on a modelled context size),
    the self-assessment bias and noise, the step and token limits, the
    REPLAN's extra tokens, the objective's weights.  The time budget never
    binds on flight_booking (the slowest of 600 episodes used 287 of 600 s).
    Approximated: the task's structure (a chain of ``stages`` visibly
    productive steps, then a two-state chain; every rate linear in the plan's
    quality, fitted on flight_booking's tuning seed 100); the task at
    ``stages`` but not looking complete is one state, although a wrong booking
    (visible 0.8) reads high again and again where a missing shortlist reads
    low: its readings are taken as independent given Z; the plan's quality is
    not updated at ``stages``; the posterior of q ignores that each step had
    its own decay (decay scales the prediction, not the update); the context
    of a step counts r replans as r·(plan − continue) tokens whatever their
    timing; the replan-rate term is charged as replan_rate/max_steps per
    REPLAN; readings below ``stages`` are not used; world changes (fare rises)
    are folded into the fitted rates; memory compression is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from controllers.base import require_unit
from opar_sim.core.controller import ModelInfo, ReflectContext
from opar_sim.core.types import ControlSignal, Decision, Evaluation

MODELLED_TASKS = ("flight_booking",)  # the tasks whose structure the model describes

# the simulated agent's defaults (opar_sim.agents.simulated.SimulatedAgentParams), used
# when no model is bound; a test checks they are the agent's
AGENT_DEFAULTS: dict[str, float] = {
    "plan_alpha": 1.2,
    "plan_beta": 1.2,
    "critique_gain": 0.2,
    "critique_tolerance": 0.15,
    "bias": 0.05,
    "noise": 0.1,
    "context_knee": 2500,
    "context_decay": 0.5,
    "quality_floor": 0.05,
    "system_tokens": 300,
    "plan_tokens": 250,
    "continue_tokens": 30,
    "act_tokens": 40,
    "eval_tokens": 90,
}
TOOL_DEFAULTS: dict[str, float] = {
    "latency_median": 0.3,
    "latency_sigma": 0.6,
    "timeout": 2.0,
    "failure_rate": 0.05,
}
RESULT_TOKEN_CAP = 200  # the agent's cap on a result in the context (worst-case check)
FAILED_ACT = 0.35  # δ_act below this: the step failed (the agent reads 0.1 for a failure)
EPS = 1e-12
Lines = tuple[np.ndarray, np.ndarray]  # 1-D alpha vectors: values at P(Z = 1) = 0 and 1
_READINGS: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
_REPLAN_CLASS: dict[Any, int] = {}


@dataclass(frozen=True)
class BayesModel:
    """Every number of the model (hashable: the cache key of its solution)."""

    horizon: int = 20
    token_budget: int = 200_000
    w_failure: float = 1.0
    w_tokens: float = 0.0
    w_replan: float = 0.0
    alpha: float = 1.2
    beta: float = 1.2
    critique_gain: float = 0.2
    p_right: float = 0.818
    quality_floor: float = 0.05
    quality_points: int = 101
    fail: float = 0.0508
    productive_base: float = 0.0
    productive_gain: float = 1.0
    stages: int = 4
    rho_base: float = 0.5
    rho_gain: float = 0.0
    done_base: float = 0.2
    done_gain: float = 0.0
    spurious: float = 0.2
    undo_base: float = 0.11
    undo_gain: float = 0.0
    kappa_base: float = 1.0
    kappa_gain: float = 0.0
    quality_classes: int = 10
    bias: float = 0.05
    noise: float = 0.1
    incomplete_level: float = 0.5
    incomplete_spread: float = 0.2
    reading_bins: int = 20
    belief_points: int = 65  # point-based backups at these beliefs (0: exact envelopes)
    context_knee: float = 2500.0
    context_decay: float = 0.5
    system_tokens: int = 300
    goal_tokens: int = 40
    observation_tokens: int = 30
    result_tokens: int = 20
    plan_tokens: int = 250
    continue_tokens: int = 30
    act_tokens: int = 40
    eval_tokens: int = 90
    token_margin: float = 8000.0

    # -- readings ------------------------------------------------------------------
    def reading_probs(self) -> tuple[np.ndarray, np.ndarray]:
        """P(reading bin | Z = 0) and P(reading bin | Z = 1), readings clipped to [0, 1]."""
        found = _READINGS.get(self)
        if found is None:
            found = _READINGS[self] = self._reading_probs()
        return found

    def _reading_probs(self) -> tuple[np.ndarray, np.ndarray]:
        # the clipped masses at exactly 0 and exactly 1 are bins of their own (an
        # over-confident agent reads a done task as exactly 1 most of the time)
        edges = np.linspace(0.0, 1.0, self.reading_bins + 1)
        s0 = math.hypot(self.noise, self.incomplete_spread)
        out = []
        for mu, sd in ((self.incomplete_level + self.bias, s0), (1.0 + self.bias, self.noise)):
            cdf = _normal_cdf(edges, mu, sd)
            out.append(np.concatenate([[cdf[0]], np.diff(cdf), [1.0 - cdf[-1]]]))
        return np.maximum(out[0], 1e-300), np.maximum(out[1], 1e-300)

    def reading_bin(self, delta_task: float) -> int:
        """The bin of a δ_task reading: 0 for exactly 0, the last for exactly 1."""
        if delta_task <= 0.0:
            return 0
        if delta_task >= 1.0:
            return self.reading_bins + 1
        return 1 + min(self.reading_bins - 1, int(delta_task * self.reading_bins))

    # -- plan quality ----------------------------------------------------------------
    def prior(self, replanned: bool) -> tuple[np.ndarray, np.ndarray]:
        """Support and weights of a plan's quality (first plan, or a replan's)."""
        n = self.quality_points
        mids = (np.arange(n) + 0.5) / n
        w = mids ** (self.alpha - 1.0) * (1.0 - mids) ** (self.beta - 1.0)
        w = w / w.sum()
        base = np.clip(mids, 0.02, 0.98)
        if not replanned or self.critique_gain == 0.0:
            return base, w
        up = np.clip(mids + self.critique_gain, 0.02, 0.98)
        return np.concatenate([base, up]), np.concatenate(
            [(1.0 - self.p_right) * w, self.p_right * w]
        )

    def posterior_table(self, replanned: bool) -> tuple[np.ndarray, np.ndarray]:
        """The support and the posterior weights for every (a, b) up to the horizon."""
        support, w = self.prior(replanned)
        # P(productive | q) at no decay: base + gain · max(floor, q)
        eff = self.productive_base + self.productive_gain * np.maximum(self.quality_floor, support)
        n = self.horizon + 2
        k = np.arange(n)
        log_a = k[:, None] * np.log(eff)[None, :]
        log_b = k[:, None] * np.log1p(-eff)[None, :]
        logs = log_a[:, None, :] + log_b[None, :, :] + np.log(w)[None, None, :]
        logs -= logs.max(axis=2, keepdims=True)
        post = np.exp(logs)
        return support, post / post.sum(axis=2, keepdims=True)

    # -- context, tokens, limits -----------------------------------------------------
    def _growth(self) -> int:
        return (
            self.observation_tokens
            + self.continue_tokens
            + self.act_tokens
            + self.result_tokens
            + self.eval_tokens
        )

    def context_before(self, step: int, replans: int) -> float:
        """Context tokens before step ``step``'s observation, ``replans`` REPLANs before it."""
        extra = (1 + replans) * (self.plan_tokens - self.continue_tokens) if step > 1 else 0
        return self.system_tokens + self.goal_tokens + (step - 1) * self._growth() + extra

    def step_tokens(self, step: int, replans: int, fresh: bool) -> float:
        """Tokens of step ``step``: plan (or continue), act and evaluate calls."""
        c = self.context_before(step, replans) + self.observation_tokens
        pc = self.plan_tokens if fresh else self.continue_tokens
        return 3 * c + 3 * pc + 2 * self.act_tokens + self.result_tokens + self.eval_tokens

    def spent_before(self, step: int, replans: int) -> float:
        """Tokens spent before step ``step`` (the replans taken as evenly spread)."""
        total = sum(self.step_tokens(i, 0, i == 1) for i in range(1, step))
        delta = self.plan_tokens - self.continue_tokens
        return total + replans * (3 * delta + 3 * delta * max(step - 2, 0) / 2)

    def can_start(self, step: int, replans: int, fresh: bool) -> bool:
        """Whether the loop starts step ``step`` (step limit and worst-case token check)."""
        if step > self.horizon:
            return False
        pc = self.plan_tokens if fresh else self.continue_tokens
        completions = pc + 2 * self.act_tokens + self.eval_tokens
        growth = completions + RESULT_TOKEN_CAP + 64
        worst = 4 * (self.context_before(step, replans) + growth) + completions
        return self.spent_before(step, replans) + worst + self.token_margin <= self.token_budget

    def decay(self, step: int, replans: int, fresh: bool) -> float:
        """The context-decay factor at step ``step``'s action."""
        pc = self.plan_tokens if fresh else self.continue_tokens
        ctx = self.context_before(step, replans) + self.observation_tokens + pc + self.act_tokens
        excess = ctx - self.context_knee
        if excess <= 0 or self.context_decay == 0:
            return 1.0
        return 1.0 - self.context_decay * excess / self.context_knee

    # -- the task at ``stages``: rates linear in the plan's effective quality ------------
    def rho_of(self, qe: np.ndarray | float) -> np.ndarray:
        """P(complete) on reaching ``stages``, at effective quality ``qe``."""
        return np.clip(self.rho_base + self.rho_gain * np.asarray(qe, dtype=float), 0.0, 1.0)

    def quality_class(self, mean: float) -> int:
        """The class of a plan's posterior mean quality (what ``stages`` remembers of it)."""
        return min(self.quality_classes - 1, max(0, int(mean * self.quality_classes)))

    def kappa(self, c: int) -> float:
        """P(complete | the task looks complete), for a plan of class ``c``."""
        q = (c + 0.5) / self.quality_classes
        return min(1.0, max(0.0, self.kappa_base + self.kappa_gain * q))

    def terminal(self, c: int) -> Lines:
        """The line of TERMINATE at ``stages`` (the value at Z = 0 and at Z = 1)."""
        return np.array([-self.w_failure]), np.array([-self.w_failure * (1.0 - self.kappa(c))])

    def replan_class(self) -> int:
        """The class of a replan's prior mean quality."""
        found = _REPLAN_CLASS.get(self)
        if found is None:
            support, w = self.prior(True)
            found = _REPLAN_CLASS[self] = self.quality_class(float(support @ w))
        return found

    def stage_rates(
        self, c: int, step: int, replans: int, fresh: bool
    ) -> tuple[float, float, float]:
        """(done, spurious, undo) of a non-failed step at ``stages``, plan class ``c``.

        done: an incomplete task is completed; spurious: it looks productive but is
        not complete; undo: a complete task is undone.  Linear in the class's
        effective quality max(floor, q_c · decay), clipped.
        """
        qe = max(
            self.quality_floor, (c + 0.5) / self.quality_classes * self.decay(step, replans, fresh)
        )
        done = min(1.0, max(0.0, self.done_base + self.done_gain * qe))
        spur = min(1.0 - done, max(0.0, self.spurious))
        undo = min(1.0, max(0.0, self.undo_base + self.undo_gain * qe))
        return done, spur, undo


def _normal_cdf(x: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    from math import erf

    out = np.empty_like(x)
    for i, v in enumerate(x):
        if v == -math.inf:
            out[i] = 0.0
        elif v == math.inf:
            out[i] = 1.0
        else:
            out[i] = 0.5 * (1.0 + erf((v - mu) / (sigma * math.sqrt(2.0))))
    return out


# -- 1-D alpha vectors: lines v(p) = (1 − p)·v0 + p·v1 on [0, 1] ---------------------------


def envelope(v0: np.ndarray, v1: np.ndarray, points: int = 0) -> Lines:
    """The upper envelope on [0, 1] of the lines (v0, v1), sorted by slope.

    Args:
        v0: Values at p = 0.
        v1: Values at p = 1.
        points: When > 0 and the envelope has more lines, keep only the lines that
            are best at one of ``points`` equally spaced beliefs (point-based pruning:
            exact at those beliefs, a lower bound between them).

    Returns:
        The lines that are maximal somewhere in [0, 1] (ties dropped), by slope.
    """
    out = _envelope(v0, v1)
    if points and len(out[0]) > points:
        grid = np.linspace(0.0, 1.0, points)
        best = np.unique(np.argmax(np.outer(1 - grid, out[0]) + np.outer(grid, out[1]), axis=1))
        out = out[0][best], out[1][best]
    return out


def _envelope(v0: np.ndarray, v1: np.ndarray) -> Lines:
    slope = v1 - v0
    order = np.lexsort((-v0, slope))
    hull: list[int] = []
    for i in order:
        if hull and abs(slope[hull[-1]] - slope[i]) <= EPS:
            continue  # same slope, lower (or equal) intercept: dominated
        while hull:
            j = hull[-1]
            # new line i beats j at p where v0_i + s_i p >= v0_j + s_j p
            x_ij = (v0[j] - v0[i]) / (slope[i] - slope[j])
            if x_ij <= EPS:  # i dominates j on [0, 1]
                hull.pop()
                continue
            if len(hull) >= 2:
                k = hull[-2]
                x_kj = (v0[k] - v0[j]) / (slope[j] - slope[k])
                if x_ij <= x_kj + EPS:
                    hull.pop()
                    continue
            break
        if hull:
            j = hull[-1]
            if (v0[j] - v0[i]) / (slope[i] - slope[j]) >= 1.0 - EPS:
                continue  # i overtakes only past p = 1
        hull.append(int(i))
    idx = np.asarray(hull, dtype=int)
    return v0[idx], v1[idx]


def _breaks(lines: Lines) -> np.ndarray:
    v0, v1 = lines
    s = v1 - v0
    out: np.ndarray = (v0[:-1] - v0[1:]) / (s[1:] - s[:-1])
    return out


def envelope_sum(a: Lines, b: Lines, points: int = 0) -> Lines:
    """The upper envelope of the pointwise sum of two envelopes (by merging breakpoints)."""
    if len(a[0]) == 1 or len(b[0]) == 1:  # a line plus an envelope is an envelope
        return a[0] + b[0], a[1] + b[1]
    xa, xb = _breaks(a), _breaks(b)
    xs = np.union1d(xa, xb)
    mids = np.concatenate([[0.0], xs]) + np.diff(np.concatenate([[0.0], xs, [1.0]])) / 2
    ia = np.searchsorted(xa, mids)
    ib = np.searchsorted(xb, mids)
    v0 = a[0][ia] + b[0][ib]
    v1 = a[1][ia] + b[1][ib]
    return envelope(v0, v1, points)


def evaluate(lines: Lines, p: float) -> float:
    """The envelope's value at belief p."""
    return float(np.max((1.0 - p) * lines[0] + p * lines[1]))


# -- the solution -------------------------------------------------------------------------
@dataclass
class Solution:
    """The model's values: arrays below ``stages``, envelopes at it; and how long it took."""

    model: BayesModel
    below: np.ndarray  # [t, r, m, a, b]: value at the Reflect after step t
    at_stages: list[list[list[Lines]]]  # [t][r][class]: the envelope in P(Z = 1)
    seconds: float = 0.0

    def start_value(self) -> float:
        """The model's expected value (minus the objective) before the first step."""
        return float(_step_values(self, 0, 0, fresh=True, first=True)[0][0, 0, 0])


@dataclass
class _Tables:
    support: dict[bool, np.ndarray]
    post: dict[bool, np.ndarray]  # [a, b, quality value]
    classes: dict[bool, np.ndarray]  # [a, b]: the class of the posterior mean


_TABLES: dict[BayesModel, _Tables] = {}


def _tables(model: BayesModel) -> _Tables:
    found = _TABLES.get(model)
    if found is None:
        support, post, classes = {}, {}, {}
        for kind in (False, True):
            support[kind], post[kind] = model.posterior_table(kind)
            mean = post[kind] @ support[kind]
            classes[kind] = np.minimum(
                model.quality_classes - 1, (mean * model.quality_classes).astype(int)
            )
        found = _TABLES[model] = _Tables(support, post, classes)
    return found


def _effective(m: BayesModel, support: np.ndarray, step: int, r: int, fresh: bool) -> np.ndarray:
    out: np.ndarray = np.maximum(m.quality_floor, support * m.decay(step, r, fresh))
    return out


def _theta(
    m: BayesModel, tab: _Tables, step: int, r: int, fresh: bool, replanned: bool
) -> np.ndarray:
    """P(productive | a, b) at step ``step`` (array over a, b)."""
    eff = m.productive_base + m.productive_gain * _effective(
        m, tab.support[replanned], step, r, fresh
    )
    out: np.ndarray = tab.post[replanned] @ eff
    return out


def _rho(
    m: BayesModel, tab: _Tables, step: int, r: int, fresh: bool, replanned: bool
) -> np.ndarray:
    """P(complete | a, b) when step ``step`` reaches ``stages`` (the posterior's expectation)."""
    out: np.ndarray = tab.post[replanned] @ m.rho_of(
        _effective(m, tab.support[replanned], step, r, fresh)
    )
    return out


def _entry_values(
    sol: Solution, j: int, r_after: int, rho: np.ndarray, cls: np.ndarray
) -> np.ndarray:
    """Value on reaching ``stages`` at step j, before its reading, per cell of ``rho``/``cls``."""
    o0, o1 = sol.model.reading_probs()
    out = np.empty(rho.shape)
    for c in np.unique(cls):
        v0, v1 = sol.at_stages[j][r_after][int(c)]
        idx = cls == c
        rr = rho[idx][:, None, None]
        vals = rr * (o1[None, :, None] * v1[None, None, :]) + (1 - rr) * (
            o0[None, :, None] * v0[None, None, :]
        )
        out[idx] = vals.max(axis=2).sum(axis=1)
    return out


def _step_values(
    sol: Solution, t: int, r: int, *, fresh: bool, first: bool = False
) -> tuple[np.ndarray, float]:
    """Values below ``stages`` of taking step t + 1 from the Reflect after step t.

    ``fresh``: the step runs a new plan (a REPLAN, or the episode's first step when
    ``first``); returns the value array over (m, a, b) (constant in a, b when fresh);
    reaching ``stages`` is valued by ``_entry_values``.
    """
    model = sol.model
    j = t + 1
    r_after = r if first or not fresh else r + 1
    if not model.can_start(j, r, fresh):
        shape = sol.below.shape[2:]
        return np.full(shape, -model.w_failure), -model.w_failure
    cost = model.w_tokens * model.step_tokens(j, r, fresh)
    if fresh and not first:
        cost += model.w_replan / model.horizon
    replanned = r_after > 0
    tab = _tables(model)
    theta = _theta(model, tab, j, r, fresh, replanned)  # [a, b]
    rho = _rho(model, tab, j, r, fresh, replanned)
    cls = tab.classes[replanned]
    nxt = sol.below[j, r_after]  # [m, a, b]
    k = model.stages
    phi = model.fail
    if fresh:
        th = theta[0, 0]
        stay = nxt[:, 0, 0]
        unprod = nxt[:, 0, 1]
        prod = np.empty(k)
        prod[: k - 1] = nxt[1:, 1, 0]
        prod[k - 1] = _entry_values(sol, j, r_after, rho[1:2, 0:1], cls[1:2, 0:1])[0, 0]
        q = -cost + phi * stay + (1 - phi) * (th * prod + (1 - th) * unprod)
        return np.broadcast_to(q[:, None, None], nxt.shape).copy(), -cost
    stay = nxt
    unprod = np.empty_like(nxt)
    unprod[:, :, :-1] = nxt[:, :, 1:]
    unprod[:, :, -1] = nxt[:, :, -1]
    prod = np.empty_like(nxt)
    prod[: k - 1, :-1, :] = nxt[1:, 1:, :]
    prod[: k - 1, -1, :] = nxt[1:, -1, :]
    entry = _entry_values(sol, j, r_after, rho, cls)  # at the counts after the step
    prod[k - 1, :-1, :] = entry[1:, :]
    prod[k - 1, -1, :] = entry[-1, :]
    q = -cost + phi * stay + (1 - phi) * (theta[None] * prod + (1 - theta[None]) * unprod)
    return q, -cost


def _projection_matrices(model: BayesModel, rates: tuple[float, float, float]) -> np.ndarray:
    """For every (outcome, reading bin): the 2×2 map of next lines to projected lines.

    Row z, column z' is P(outcome, Z' = z', reading | Z = z): a projected line is
    (g0, g1) = M · (α0, α1).  Outcomes: failed (Z unchanged), productive (only from
    Z = 0: complete with chance ``done``, else ``spurious``), unproductive (Z = 1
    undone with chance ``undo``).
    """
    found = _MATS.get((model, rates))
    if found is not None:
        return found
    o0, o1 = model.reading_probs()
    phi = model.fail
    done, spur, u = rates
    out = []
    for y in range(len(o0)):
        out.append([[phi * o0[y], 0.0], [0.0, phi * o1[y]]])
        go = 1 - phi  # the step ran
        out.append([[go * spur * o0[y], go * done * o1[y]], [0.0, 0.0]])
        out.append([[go * (1 - done - spur) * o0[y], 0.0], [go * u * o0[y], go * (1 - u) * o1[y]]])
    found = _MATS[(model, rates)] = np.asarray(out)
    return found


_MATS: dict[tuple[BayesModel, tuple[float, float, float]], np.ndarray] = {}


def _backup_exact(mats: np.ndarray, nxt: Lines, points: int) -> Lines:
    total: Lines | None = None
    for mat in mats:
        g0 = mat[0, 0] * nxt[0] + mat[0, 1] * nxt[1]
        g1 = mat[1, 0] * nxt[0] + mat[1, 1] * nxt[1]
        env = envelope(g0, g1, points)
        total = env if total is None else envelope_sum(total, env, points)
    assert total is not None
    return total


def _backup_points(mats: np.ndarray, nxt: Lines, points: int) -> Lines:
    """Point-based backup: at each belief of the grid, the best projected line per outcome."""
    grid = np.linspace(0.0, 1.0, points)
    a0, a1 = nxt
    g0 = mats[:, 0, 0, None] * a0[None] + mats[:, 0, 1, None] * a1[None]  # [outcome, line]
    g1 = mats[:, 1, 0, None] * a0[None] + mats[:, 1, 1, None] * a1[None]
    vals = (1 - grid)[None, :, None] * g0[:, None, :] + grid[None, :, None] * g1[:, None, :]
    best = np.argmax(vals, axis=2)  # [outcome, belief]
    v0 = np.take_along_axis(g0, best, axis=1).sum(axis=0)
    v1 = np.take_along_axis(g1, best, axis=1).sum(axis=0)
    return v0, v1


def _stage_lines(sol: Solution, t: int, r: int, fresh: bool, c: int) -> Lines:
    """The lines of CONTINUE (or REPLAN) at ``stages``, plan class ``c``, after step t."""
    model = sol.model
    j = t + 1
    if not model.can_start(j, r, fresh):
        return np.array([-model.w_failure]), np.array([-model.w_failure])
    r_after = r + 1 if fresh else r
    c_next = model.replan_class() if fresh else c
    cost = model.w_tokens * model.step_tokens(j, r, fresh)
    if fresh:
        cost += model.w_replan / model.horizon
    mats = _projection_matrices(model, model.stage_rates(c_next, j, r, fresh))
    nxt = sol.at_stages[j][r_after][c_next]
    if model.belief_points:
        total = _backup_points(mats, nxt, model.belief_points)
    else:
        total = _backup_exact(mats, nxt, 0)
    return total[0] - cost, total[1] - cost


def _best_lines(lines: Lines, points: int) -> Lines:
    """The envelope (exact), or the distinct lines best at the grid's beliefs."""
    if not points:
        return envelope(*lines)
    grid = np.linspace(0.0, 1.0, points)
    best = np.unique(np.argmax(np.outer(1 - grid, lines[0]) + np.outer(grid, lines[1]), axis=1))
    return _envelope(lines[0][best], lines[1][best])


def solve(model: BayesModel) -> Solution:
    """Backward induction over the whole horizon (see the module docstring).

    Args:
        model: The model.

    Returns:
        The values below ``stages``, the envelopes at it, and the solve time.
    """
    import time

    start = time.perf_counter()
    h, k, nc = model.horizon, model.stages, model.quality_classes
    n = h + 2
    below = np.full((h + 2, h + 2, k, n, n), -model.w_failure)
    terminals = [model.terminal(c) for c in range(nc)]
    at_stages: list[list[list[Lines]]] = [
        [list(terminals) for _ in range(h + 2)] for _ in range(h + 2)
    ]
    sol = Solution(model, below, at_stages)
    memo: dict[tuple[Any, ...], Lines] = {}
    for t in range(h - 1, 0, -1):
        for r in range(0, min(t, h + 1)):
            rep: Lines | None = None
            for c in range(nc):
                terminal = terminals[c]
                key = (model.kappa(c), *_stage_key(model, t, r, c, at_stages))
                lines = memo.get(key)
                if lines is None:
                    cont = _stage_lines(sol, t, r, False, c)
                    if rep is None:
                        rep = _stage_lines(sol, t, r, True, c)
                    lines = _best_lines(
                        (
                            np.concatenate([cont[0], rep[0], terminal[0]]),
                            np.concatenate([cont[1], rep[1], terminal[1]]),
                        ),
                        model.belief_points,
                    )
                    memo[key] = lines
                at_stages[t][r][c] = lines
            cont_v, _ = _step_values(sol, t, r, fresh=False)
            rep_v, _ = _step_values(sol, t, r, fresh=True)
            below[t, r] = np.maximum(np.maximum(cont_v, rep_v), -model.w_failure)
    sol.seconds = time.perf_counter() - start
    return sol


def _stage_key(
    model: BayesModel, t: int, r: int, c: int, at: list[list[list[Lines]]]
) -> tuple[Any, ...]:
    """What the envelope at (t, r, c) depends on: costs, rates, feasibility, successors."""
    j = t + 1
    parts: list[Any] = []
    for fresh, r_after in ((False, r), (True, r + 1)):
        c_next = model.replan_class() if fresh else c
        ok = model.can_start(j, r, fresh)
        parts.append(ok)
        if ok:
            parts.append(round(model.w_tokens * model.step_tokens(j, r, fresh), 12))
            parts.append(model.stage_rates(c_next, j, r, fresh))
            parts.append(id(at[j][min(r_after, len(at[j]) - 1)][c_next]))
    return tuple(parts)


_SOLUTIONS: dict[BayesModel, Solution] = {}


def solution(model: BayesModel) -> Solution:
    """The cached solution of ``model`` (solved on first use in this process)."""
    found = _SOLUTIONS.get(model)
    if found is None:
        found = solve(model)
        _SOLUTIONS[model] = found
    return found


def model_from(info: ModelInfo | None, overrides: Mapping[str, Any]) -> BayesModel:
    """The model of a spec: its agent's knobs, tool faults, limits and objective.

    Args:
        info: The spec's model parameters (None: the simulated agent's defaults
            on flight_booking's limits).
        overrides: The law's own parameters (task structure, discretisation).

    Returns:
        The model.
    """
    agent = dict(AGENT_DEFAULTS)
    tools = dict(TOOL_DEFAULTS)
    fields: dict[str, Any] = {}
    if info is not None:
        agent.update({k: v for k, v in info.agent.items() if k in AGENT_DEFAULTS})
        found_tools = info.task_params.get("tools")
        if isinstance(found_tools, Mapping):
            tools.update({k: v for k, v in found_tools.items() if k in TOOL_DEFAULTS})
        fields["horizon"] = info.max_steps
        fields["token_budget"] = info.token_budget
        fields["w_failure"] = float(info.objective.get("failure", 1.0))
        fields["w_tokens"] = float(info.objective.get("tokens", 0.0))
        fields["w_replan"] = float(info.objective.get("replan_rate", 0.0))
    bias, noise, tol = agent["bias"], agent["noise"], agent["critique_tolerance"]
    if noise > 0:
        z = math.sqrt(2.0) * noise
        p_right = 0.5 * (math.erf((tol - bias) / z) - math.erf((-tol - bias) / z))
    else:
        p_right = 1.0 if abs(bias) <= tol else 0.0
    # a tool call times out when its log-normal latency passes the timeout
    if tools["latency_sigma"] > 0:
        zt = math.log(tools["timeout"] / tools["latency_median"]) / tools["latency_sigma"]
        p_timeout = 0.5 * math.erfc(zt / math.sqrt(2.0))
    else:
        p_timeout = float(tools["latency_median"] > tools["timeout"])
    fail = p_timeout + (1 - p_timeout) * tools["failure_rate"]
    fields.update(
        alpha=agent["plan_alpha"],
        beta=agent["plan_beta"],
        critique_gain=agent["critique_gain"],
        p_right=p_right,
        quality_floor=agent["quality_floor"],
        fail=fail,
        bias=bias,
        noise=noise,
        context_knee=float(agent["context_knee"]),
        context_decay=agent["context_decay"],
        system_tokens=int(agent["system_tokens"]),
        plan_tokens=int(agent["plan_tokens"]),
        continue_tokens=int(agent["continue_tokens"]),
        act_tokens=int(agent["act_tokens"]),
        eval_tokens=int(agent["eval_tokens"]),
    )
    fields.update(overrides)
    return BayesModel(**fields)


# the task structure fitted on flight_booking, tuning seed 100 (docs/bayes.md, "Fitting")
FITTED: dict[str, float] = {
    "productive_base": 0.36,
    "productive_gain": 0.33,
    "rho_base": 0.02,
    "rho_gain": 0.69,
    "done_base": -0.08,
    "done_gain": 0.63,
    "spurious": 0.19,
    "undo_base": 0.41,
    "undo_gain": -0.43,
    "kappa_base": 0.97,
    "kappa_gain": 0.0,
    "incomplete_level": 0.535,
    "incomplete_spread": 0.186,
}


class BayesReflector:
    """Bayes-optimal on the model: the decision of highest expected objective given the belief.

    Its parameters are the model's task structure and discretisation (the rest
    comes from the spec): ``stages``, ``productive_base``, ``productive_gain``,
    the rates at ``stages`` (``rho_*``, ``done_*``, ``spurious``, ``undo_*``), the chance
    ``kappa_base`` + ``kappa_gain``·q that a task which looks complete is complete,
    ``incomplete_level``, ``incomplete_spread``, ``reading_bins``,
    ``quality_points``, ``quality_classes``, the context model's ``goal_tokens``,
    ``observation_tokens`` and ``result_tokens``, the reserve ``token_margin``,
    and ``productive_act``, the δ_act at or above which a step counts as productive.
    """

    name = "bayes"

    # nothing to tune: the law is derived from the model (the shoot-out still searches the
    # shared stop confirmation); the task-structure parameters below are the model's
    SPACE: ClassVar[dict[str, tuple[float, float]]] = {}

    def __init__(
        self,
        stages: int = 4,
        productive_base: float = FITTED["productive_base"],
        productive_gain: float = FITTED["productive_gain"],
        rho_base: float = FITTED["rho_base"],
        rho_gain: float = FITTED["rho_gain"],
        done_base: float = FITTED["done_base"],
        done_gain: float = FITTED["done_gain"],
        spurious: float = FITTED["spurious"],
        undo_base: float = FITTED["undo_base"],
        undo_gain: float = FITTED["undo_gain"],
        kappa_base: float = FITTED["kappa_base"],
        kappa_gain: float = FITTED["kappa_gain"],
        incomplete_level: float = FITTED["incomplete_level"],
        incomplete_spread: float = FITTED["incomplete_spread"],
        reading_bins: int = 20,
        quality_points: int = 101,
        quality_classes: int = 10,
        goal_tokens: int = 40,
        observation_tokens: int = 30,
        result_tokens: int = 20,
        productive_act: float = 0.8,
        token_margin: float = 8000.0,
    ) -> None:
        """Build the law; its model is completed by the spec (``bind_model``).

        Args:
            stages: Visibly productive steps the task needs (flight_booking: search,
                points, shortlist, booking).
            productive_base: P(productive) of a step at quality 0 (wrong actions that
                still look productive).
            productive_gain: How much P(productive) rises with the effective quality.
            rho_base: P(complete) on reaching ``stages``, at effective quality 0.
            rho_gain: Its rise with the effective quality.
            done_base: P(a non-failed step completes a task at ``stages``), at quality 0.
            done_gain: Its rise with the effective quality.
            spurious: P(a non-failed step at ``stages`` looks productive, not completing).
            undo_base: P(a non-failed step undoes a completed task), at quality 0.
            undo_gain: Its change with the effective quality.
            kappa_base: P(complete | the task looks complete), at plan quality 0.
            kappa_gain: Its change with the plan's quality.
            incomplete_level: The visible progress of a task at ``stages`` but not done.
            incomplete_spread: Its spread beyond the agent's noise.
            reading_bins: Equal bins the δ_task readings are read in.
            quality_points: Points of the discretised plan-quality prior.
            quality_classes: Classes of the plan's posterior mean kept at ``stages``.
            goal_tokens: Tokens of the goal in the context.
            observation_tokens: Tokens of an observation.
            result_tokens: Mean tokens of a tool result in the context.
            productive_act: δ_act at or above which a step was productive.
            token_margin: Tokens kept in reserve when predicting the loop's token check
                (the spread of the real spend around the modelled one).
        """
        require_unit(
            productive_base=productive_base,
            productive_gain=productive_gain,
            spurious=spurious,
            incomplete_level=incomplete_level,
            productive_act=productive_act,
        )
        for name, value in (
            ("rho_base", rho_base),
            ("rho_gain", rho_gain),
            ("done_base", done_base),
            ("done_gain", done_gain),
            ("undo_base", undo_base),
            ("undo_gain", undo_gain),
            ("kappa_base", kappa_base),
            ("kappa_gain", kappa_gain),
        ):
            if not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [-1, 1], got {value}")
        if productive_base + productive_gain > 1.0:
            raise ValueError("productive_base + productive_gain must be <= 1")
        if stages < 1 or reading_bins < 1 or quality_points < 2 or quality_classes < 1:
            raise ValueError(
                "stages, reading_bins and quality_classes must be >= 1, quality_points >= 2"
            )
        self.overrides: dict[str, Any] = {
            "stages": int(stages),
            "productive_base": productive_base,
            "productive_gain": productive_gain,
            "rho_base": rho_base,
            "rho_gain": rho_gain,
            "done_base": done_base,
            "done_gain": done_gain,
            "spurious": spurious,
            "undo_base": undo_base,
            "undo_gain": undo_gain,
            "kappa_base": kappa_base,
            "kappa_gain": kappa_gain,
            "incomplete_level": incomplete_level,
            "incomplete_spread": incomplete_spread,
            "reading_bins": int(reading_bins),
            "quality_points": int(quality_points),
            "quality_classes": int(quality_classes),
            "goal_tokens": int(goal_tokens),
            "observation_tokens": int(observation_tokens),
            "result_tokens": int(result_tokens),
            "token_margin": float(token_margin),
        }
        self.productive_act = productive_act
        self._info: ModelInfo | None = None
        self._model: BayesModel | None = None
        self.reset()

    def bind_model(self, model: ModelInfo) -> None:
        """Receive the spec's model parameters (agent, tools, limits, objective).

        Raises:
            ValueError: for a task or agent the model does not describe (only
                flight_booking with the simulated agent): its "optimum" would mean nothing.
        """
        if model.task not in MODELLED_TASKS or model.agent_kind != "simulated":
            raise ValueError(
                f"bayes models {', '.join(MODELLED_TASKS)} with the simulated agent; "
                f"not {model.task!r} with a {model.agent_kind!r} agent"
            )
        self._info = model
        self._model = None

    @property
    def model(self) -> BayesModel:
        """The model the law is optimal for."""
        if self._model is None:
            self._model = model_from(self._info, self.overrides)
        return self._model

    @property
    def solution(self) -> Solution:
        """The model's solution (solved once per model, cached in-process)."""
        return solution(self.model)

    def reset(self) -> None:
        """Back to the belief before the first step."""
        self.m = 0
        self.a = 0
        self.b = 0
        self.p = 0.0
        self.c = 0  # the plan's class at ``stages``
        self._next = (1, 0, True)  # the coming step: (step, replans before it, fresh plan)

    def observe(self, evaluation: Evaluation, ctx: ReflectContext) -> None:
        """Update the belief with one step's evaluation (Bayes' rule on the model)."""
        model = self.model
        j, r, fresh = self._next
        if ctx.plan_age == 1:  # a fresh plan ran this step: its counts start afresh
            self.a = self.b = 0
        failed = evaluation.delta_act < FAILED_ACT
        productive = not failed and evaluation.delta_act >= self.productive_act
        o0, o1 = model.reading_probs()
        y = model.reading_bin(evaluation.delta_task)
        if self.m < model.stages:
            if failed:
                return
            if not productive:
                self.b += 1
                return
            self.a += 1
            self.m += 1
            if self.m < model.stages:
                return
            tab = _tables(model)
            replanned = ctx.replans > 0
            n = model.horizon + 1
            a, b = min(self.a, n), min(self.b, n)
            pre = float(_rho(model, tab, j, r, fresh, replanned)[a, b])
            self.c = int(tab.classes[replanned][a, b])
        else:
            done, spur, u = model.stage_rates(self.c, j, r, fresh)
            p = self.p
            if failed:
                pre = p
            elif productive:
                pre = done / (done + spur) if done + spur > 0 else 0.0
            else:
                pre = p * (1 - u) / (p + (1 - p) * (1 - done - spur))
        num = pre * o1[y]
        self.p = float(num / (num + (1 - pre) * o0[y]))

    def values(self, ctx: ReflectContext) -> dict[str, float]:
        """The expected value (minus the objective to come) of each decision now."""
        sol, model = self.solution, self.model
        t, r = ctx.step, min(ctx.replans, model.horizon)
        done = self.p * model.kappa(self.c) if self.m >= model.stages else 0.0
        stop = -model.w_failure * (1.0 - done)
        if t >= model.horizon:
            return {"continue": -model.w_failure, "replan": -model.w_failure, "terminate": stop}
        if self.m < model.stages:
            a, b = min(self.a, model.horizon + 1), min(self.b, model.horizon + 1)
            cont = _step_values(sol, t, r, fresh=False)[0][self.m, a, b]
            rep = _step_values(sol, t, r, fresh=True)[0][self.m, a, b]
        else:
            cont = evaluate(_stage_lines(sol, t, r, False, self.c), self.p)
            rep = evaluate(_stage_lines(sol, t, r, True, self.c), self.p)
        return {"continue": float(cont), "replan": float(rep), "terminate": stop}

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """Update the belief, then take the decision of highest expected value.

        Args:
            evaluation: The agent's self-assessment (δ_act: productive or failed; δ_task).
            ctx: The step, the replans so far and the plan's age.

        Returns:
            The decision, with terms ``p_done`` (P(complete)), ``stage``, the plan's
            counts and each decision's value; ties go to CONTINUE, then REPLAN.
        """
        self.observe(evaluation, ctx)
        v = self.values(ctx)
        terms = {
            "p_done": self.p * self.model.kappa(self.c) if self.m >= self.model.stages else 0.0,
            "p_looks_done": self.p if self.m >= self.model.stages else 0.0,
            "stage": float(self.m),
            "productive": float(self.a),
            "unproductive": float(self.b),
            "value_continue": v["continue"],
            "value_replan": v["replan"],
            "value_terminate": v["terminate"],
        }
        best = max(v.values())
        r = min(ctx.replans, self.model.horizon)
        if v["continue"] >= best - EPS:
            self._next = (ctx.step + 1, r, False)
            return Decision(ControlSignal.CONTINUE, "continuing is worth most", terms)
        if v["replan"] >= best - EPS:
            self.a = self.b = 0
            if self.m >= self.model.stages:
                self.c = self.model.replan_class()
            self._next = (ctx.step + 1, r, True)
            return Decision(ControlSignal.REPLAN, "a fresh plan is worth most", terms)
        if terms["p_done"] >= 0.5:
            return Decision(ControlSignal.TERMINATE, "goal reached: P(done) is high enough", terms)
        return Decision(
            ControlSignal.TERMINATE, "give up: nothing left is worth its cost", terms, give_up=True
        )


def describe_model(model: BayesModel) -> dict[str, Any]:
    """The model's numbers, for reports."""
    return asdict(model)
