"""The POMDP of the OPAR loop that ``bayes`` plans with (docs/bayes.md, "The model").

Below ``stages`` the belief is observed counts; at ``stages`` the task is in one of
``len(levels)`` hidden states (flight_booking: lost, far, near, a wrong booking,
looks complete — the last state is always "looks complete"), each read through its own
mixture of visible levels, moved between by each non-failed step with chances that are
lines in the plan's effective quality q_e.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RESULT_TOKEN_CAP = 200  # the agent's cap on a result in the context (worst-case check)
Line = tuple[float, float]  # (base, gain): base + gain · q_e, clipped at 0

# the chain fitted on flight_booking, tuning seed 100 (controllers/bayes/fit.py,
# docs/bayes.md "Fitting"): the states lost, far, near, wrong booking, looks complete
FITTED_LEVELS: tuple[tuple[tuple[float, float], ...], ...] = (
    ((0.0, 0.05), (0.1, 0.692), (0.2, 0.258)),
    ((0.3, 0.23), (0.4, 0.77)),
    ((0.5, 0.122), (0.6, 0.878)),
    ((0.75, 0.058), (0.8, 0.942)),
    ((1.0, 1.0),),
)
FITTED_ENTRY: tuple[Line, ...] = (
    (0.041, -0.05),
    (0.675, -0.821),
    (0.4, -0.141),
    (0.246, -0.251),
    (-0.361, 1.264),
)
# per source state, for each destination: (destination, unproductive), (destination, productive)
FITTED_MOVES: tuple[tuple[Line, ...], ...] = (
    (
        (1.385, -1.659),
        (-0.026, 0.125),
        (0.0, 0.0),
        (-0.359, 1.534),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
    ),
    (
        (0.263, -0.246),
        (0.0, 0.0),
        (0.554, -0.12),
        (-0.039, 0.197),
        (0.0, 0.0),
        (0.155, 0.206),
        (0.0, 0.0),
        (0.039, -0.013),
        (0.0, 0.0),
        (0.028, -0.025),
    ),
    (
        (0.0, 0.0),
        (0.0, 0.0),
        (0.149, -0.138),
        (0.0, 0.0),
        (0.911, -0.782),
        (0.036, 0.006),
        (0.0, 0.0),
        (0.105, -0.063),
        (0.0, 0.0),
        (-0.2, 0.977),
    ),
    (
        (0.0, 0.0),
        (0.0, 0.0),
        (-0.023, 0.21),
        (0.0, 0.0),
        (-0.072, 0.781),
        (0.0, 0.0),
        (1.122, -1.051),
        (0.0, 0.0),
        (0.0, 0.0),
        (-0.027, 0.059),
    ),
    (
        (0.0, 0.0),
        (0.0, 0.0),
        (0.116, -0.148),
        (0.0, 0.0),
        (0.13, -0.074),
        (0.0, 0.0),
        (0.0, 0.003),
        (0.0, 0.0),
        (0.754, 0.219),
        (0.0, 0.0),
    ),
)
FITTED_KAPPA = 0.971
FITTED_PRODUCTIVE: Line = (0.325, 0.387)

_READINGS: dict[object, np.ndarray] = {}
_REPLAN_CLASS: dict[object, int] = {}


@dataclass(frozen=True)
class BayesModel:
    """Every number of the model (hashable: the cache key of its solution).

    ``levels[s]``: state s's visible levels and their shares (its readings are the
    mixture of N(level + bias, noise) clipped to [0, 1]); ``entry[s]``: the line of
    P(state s) on reaching ``stages``; ``moves[s]``: for each destination d the lines
    of (d, unproductive) and (d, productive) of a non-failed step from s.  Lines are
    clipped at 0 and renormalised.  The last state is "looks complete".
    """

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
    levels: tuple[tuple[tuple[float, float], ...], ...] = FITTED_LEVELS
    entry: tuple[Line, ...] = FITTED_ENTRY
    moves: tuple[tuple[Line, ...], ...] = FITTED_MOVES
    kappa_base: float = 1.0
    kappa_gain: float = 0.0
    quality_classes: int = 10
    bias: float = 0.05
    noise: float = 0.1
    reading_bins: int = 20
    belief_points: int = 6  # the belief grid's resolution at ``stages``
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

    @property
    def n_states(self) -> int:
        """Hidden states at ``stages`` (the last: looks complete)."""
        return len(self.levels)

    # -- readings ------------------------------------------------------------------
    def reading_probs(self) -> np.ndarray:
        """P(reading bin | state) for every state at ``stages``: [state, bin]."""
        found = _READINGS.get(self)
        if found is None:
            found = _READINGS[self] = self._reading_probs()
        return found

    def _reading_probs(self) -> np.ndarray:
        # the clipped masses at exactly 0 and exactly 1 are bins of their own (an
        # over-confident agent reads a done task as exactly 1 most of the time)
        edges = np.linspace(0.0, 1.0, self.reading_bins + 1)
        out = np.zeros((self.n_states, self.reading_bins + 2))
        for s, mix in enumerate(self.levels):
            total = sum(w for _, w in mix)
            for level, w in mix:
                cdf = normal_cdf(edges, level + self.bias, self.noise)
                out[s] += w / total * np.concatenate([[cdf[0]], np.diff(cdf), [1.0 - cdf[-1]]])
        return np.maximum(out, 1e-300)

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

    def quality_class(self, mean: float) -> int:
        """The class of a plan's posterior mean quality (what ``stages`` remembers of it)."""
        return min(self.quality_classes - 1, max(0, int(mean * self.quality_classes)))

    def replan_class(self) -> int:
        """The class of a replan's prior mean quality."""
        found = _REPLAN_CLASS.get(self)
        if found is None:
            support, w = self.prior(True)
            found = _REPLAN_CLASS[self] = self.quality_class(float(support @ w))
        return found

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

    # -- the task at ``stages`` ----------------------------------------------------------
    def entry_probs(self, qe: np.ndarray) -> np.ndarray:
        """P(state) on reaching ``stages`` at effective qualities ``qe``: [..., state]."""
        lines = np.asarray(self.entry)
        raw = np.maximum(0.0, lines[:, 0] + lines[:, 1] * np.asarray(qe, dtype=float)[..., None])
        total = raw.sum(axis=-1, keepdims=True)
        out: np.ndarray = raw / np.where(total > 0, total, 1.0)
        return out

    def class_quality(self, c: int, step: int, replans: int, fresh: bool) -> float:
        """The effective quality of class ``c`` at step ``step`` (decayed, floored)."""
        q = (c + 0.5) / self.quality_classes
        return max(self.quality_floor, q * self.decay(step, replans, fresh))

    def stage_moves(self, qe: float) -> tuple[np.ndarray, np.ndarray]:
        """P(destination, unproductive | source) and P(destination, productive | source).

        Args:
            qe: The plan's effective quality.

        Returns:
            Two [source, destination] matrices that together sum to 1 per source.
        """
        s = self.n_states
        lines = np.asarray(self.moves).reshape(s, s, 2, 2)  # [src, dst, prod, (base, gain)]
        raw = np.maximum(0.0, lines[..., 0] + lines[..., 1] * qe)
        total = raw.sum(axis=(1, 2), keepdims=True)
        raw = raw / np.where(total > 0, total, 1.0)
        return raw[:, :, 0], raw[:, :, 1]

    def kappa(self, c: int) -> float:
        """P(complete | the task looks complete), for a plan of class ``c``."""
        q = (c + 0.5) / self.quality_classes
        return min(1.0, max(0.0, self.kappa_base + self.kappa_gain * q))

    def terminal(self, c: int) -> np.ndarray:
        """The alpha vector of TERMINATE at ``stages`` (its value in every state): [1, state]."""
        out = np.full((1, self.n_states), -self.w_failure)
        out[0, -1] = -self.w_failure * (1.0 - self.kappa(c))
        return out


def two_state(
    rho: Line, done: Line, spurious: float, undo: Line, level: float, spread_levels: int = 1
) -> dict[str, object]:
    """The fields of a two-state chain (not done / looks complete), for small models.

    Args:
        rho: The line of P(looks complete) on reaching ``stages``.
        done: The line of P(a step completes an undone task, looking productive).
        spurious: P(a step at an undone task looks productive without completing it).
        undo: The line of P(a step undoes a completed task).
        level: The visible level of an undone task.
        spread_levels: Unused (one level).

    Returns:
        ``levels``, ``entry`` and ``moves`` for ``BayesModel``.
    """
    del spread_levels
    no = (0.0, 0.0)
    stay0 = (1.0 - done[0] - spurious, -done[1])
    return {
        "levels": (((level, 1.0),), ((1.0, 1.0),)),
        "entry": ((1.0 - rho[0], -rho[1]), rho),
        "moves": (
            (stay0, (spurious, 0.0), no, done),
            (undo, no, (1.0 - undo[0], -undo[1]), no),
        ),
    }


def normal_cdf(x: np.ndarray, mu: float, sigma: float) -> np.ndarray:
    """The normal CDF at ``x`` (±inf allowed)."""
    out = np.empty_like(x)
    for i, v in enumerate(x):
        if v == -math.inf:
            out[i] = 0.0
        elif v == math.inf:
            out[i] = 1.0
        else:
            out[i] = 0.5 * (1.0 + math.erf((v - mu) / (sigma * math.sqrt(2.0))))
    return out
