"""Backward induction on the model: arrays below ``stages``, alpha vectors at it.

At ``stages`` the belief is a point of the simplex over the hidden states; the value
of each (step, replans, plan class) is a set of alpha vectors (one value per state),
built by point-based backups (PBVI) at a fixed set of beliefs: every vector is the
value of a real policy (so the value is a lower bound everywhere) and it is exact at
the set's beliefs whenever the set holds every belief the next step can reach from
them (``reachable_beliefs`` on a tiny model).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from controllers.bayes.model import BayesModel

Alphas = np.ndarray  # [vector, state]


def belief_grid(n_states: int, resolution: int) -> np.ndarray:
    """Every belief whose coordinates are multiples of 1/resolution: [point, state].

    Args:
        n_states: Dimensions of the simplex.
        resolution: The grid's denominator (>= 1); the corners are always in it.

    Returns:
        The C(resolution + n_states − 1, n_states − 1) points.
    """
    out = []
    # stars and bars: the bar positions split `resolution` units among the states
    for bars in combinations(range(resolution + n_states - 1), n_states - 1):
        cuts = (-1, *bars, resolution + n_states - 1)
        out.append([cuts[i + 1] - cuts[i] - 1 for i in range(n_states)])
    return np.asarray(out, dtype=float) / resolution


@dataclass
class Solution:
    """The model's values: arrays below ``stages``, alpha vectors at it; the solve time."""

    model: BayesModel
    below: np.ndarray  # [t, r, m, a, b]: value at the Reflect after step t
    at_stages: list[list[list[Alphas]]]  # [t][r][class]
    beliefs: dict[int, np.ndarray]  # [t]: the beliefs backed up at the Reflect after step t
    seconds: float = 0.0
    # the vectors of CONTINUE and REPLAN at ``stages`` by (t, r, fresh, class), kept for
    # the lookups of each Reflect
    actions: dict[tuple[int, int, bool, int], Alphas] = field(default_factory=dict)
    # the values of CONTINUE and REPLAN below ``stages`` by (t, r, fresh), over (m, a, b)
    steps: dict[tuple[int, int, bool], np.ndarray] = field(default_factory=dict)

    def step_vector(self, t: int, r: int, fresh: bool) -> np.ndarray:
        """The values below ``stages`` of CONTINUE (``fresh`` False) or REPLAN after step t."""
        found = self.steps.get((t, r, fresh))
        if found is None:
            found = self.steps[(t, r, fresh)] = step_values(self, t, r, fresh=fresh)
        return found

    def action_vectors(self, t: int, r: int, fresh: bool, c: int) -> Alphas:
        """The vectors of CONTINUE (``fresh`` False) or REPLAN at ``stages`` after step t."""
        found = self.actions.get((t, r, fresh, c))
        if found is None:
            found = self.actions[(t, r, fresh, c)] = stage_vectors(self, t, r, fresh, c)
        return found

    def start_value(self) -> float:
        """The model's expected value (minus the objective) before the first step."""
        return float(step_values(self, 0, 0, fresh=True, first=True)[0, 0, 0])

    def predicted_success(self) -> float:
        """P(success) before the first step, infeasible worlds included.

        The DP plans for feasible worlds; in an infeasible world no law succeeds, so
        P(success) = ``p_feasible`` · P(success | feasible), the latter from the start
        value of the failure-only objective (−w_failure · P(failure)).  On that
        objective planning for feasible worlds is also exact for the mixture: an
        infeasible world adds the same −w_failure to every decision's value.

        Raises:
            ValueError: when the objective also weighs tokens or replans.
        """
        m = self.model
        if m.w_tokens or m.w_replan:
            raise ValueError("predicted_success needs the failure-only objective")
        return m.p_feasible * (1.0 + self.start_value() / m.w_failure)


@dataclass
class Tables:
    """The plan-quality posteriors and their classes for every (a, b)."""

    support: dict[bool, np.ndarray]
    post: dict[bool, np.ndarray]  # [a, b, quality value]
    classes: dict[bool, np.ndarray]  # [a, b]: the class of the posterior mean


_TABLES: dict[BayesModel, Tables] = {}
_MATS: dict[tuple[BayesModel, float], np.ndarray] = {}


def tables(model: BayesModel) -> Tables:
    """The model's posterior tables (cached)."""
    found = _TABLES.get(model)
    if found is None:
        support, post, classes = {}, {}, {}
        for kind in (False, True):
            support[kind], post[kind] = model.posterior_table(kind)
            mean = post[kind] @ support[kind]
            classes[kind] = np.minimum(
                model.quality_classes - 1, (mean * model.quality_classes).astype(int)
            )
        found = _TABLES[model] = Tables(support, post, classes)
    return found


def effective(m: BayesModel, support: np.ndarray, step: int, r: int, fresh: bool) -> np.ndarray:
    """The effective quality of every support point at step ``step``."""
    out: np.ndarray = np.maximum(m.quality_floor, support * m.decay(step, r, fresh))
    return out


def theta(
    m: BayesModel, tab: Tables, step: int, r: int, fresh: bool, replanned: bool
) -> np.ndarray:
    """P(productive | a, b) at step ``step`` (array over a, b)."""
    eff = m.productive_base + m.productive_gain * effective(
        m, tab.support[replanned], step, r, fresh
    )
    out: np.ndarray = tab.post[replanned] @ eff
    return out


def entry_prior(
    m: BayesModel,
    tab: Tables,
    step: int,
    r: int,
    fresh: bool,
    replanned: bool,
    early: int | None = None,
) -> np.ndarray:
    """P(state | a, b) when step ``step`` reaches ``stages``: [a, b, state].

    ``early``: None for the entry at ``stages``, i for an early entry at
    ``early_stages[i]`` (the counts a, b are then those after the step).
    """
    probs = m.entry_probs(effective(m, tab.support[replanned], step, r, fresh), early)
    out: np.ndarray = tab.post[replanned] @ probs
    return out


def law_quality(
    m: BayesModel, tab: Tables, step: int, r: int, fresh: bool, replanned: bool
) -> np.ndarray:
    """The law's effective quality of the plan at step ``step``: the posterior mean's, [a, b]."""
    out: np.ndarray = tab.post[replanned] @ effective(m, tab.support[replanned], step, r, fresh)
    return out


def outcome_matrices(model: BayesModel, qe: float) -> np.ndarray:
    """For every (outcome, reading bin): P(outcome, next state, reading | state).

    Outcomes: failed (the state kept), unproductive, productive.  Returns
    [outcome·bin, state, next state]; a projected vector is M @ alpha.
    """
    key = (model, round(qe, 12))
    found = _MATS.get(key)
    if found is not None:
        return found
    obs = model.reading_probs()  # [state, bin]
    unprod, prod = model.stage_moves(qe)
    phi = model.fail
    s = model.n_states
    out = []
    for y in range(obs.shape[1]):
        out.append(phi * np.eye(s) * obs[None, :, y])
        out.append((1 - phi) * unprod * obs[None, :, y])
        out.append((1 - phi) * prod * obs[None, :, y])
    found = _MATS[key] = np.asarray(out)
    return found


def backup(mats: np.ndarray, nxt: Alphas, beliefs: np.ndarray) -> Alphas:
    """Point-based backup: at each belief, the best projected vector per outcome, summed.

    Args:
        mats: [outcome, state, next state] (``outcome_matrices``).
        nxt: The next step's alpha vectors.
        beliefs: The beliefs to back up at.

    Returns:
        One vector per belief: [belief, state].
    """
    g = mats @ nxt.T  # [outcome, state, vector]: the projected vectors
    vals = beliefs @ g  # [outcome, belief, vector]
    best = np.argmax(vals, axis=2)  # [outcome, belief]
    picked = np.take_along_axis(g, best[:, None, :], axis=2)  # [outcome, state, belief]
    out: np.ndarray = picked.sum(axis=0).T
    return out


def best_vectors(candidates: Alphas, beliefs: np.ndarray) -> Alphas:
    """The distinct candidates that are best at one of the beliefs."""
    best = np.unique(np.argmax(beliefs @ candidates.T, axis=1))
    out: np.ndarray = candidates[best]
    return out


def value_at(alphas: Alphas, belief: np.ndarray) -> float:
    """The value of a belief: the best of the alpha vectors there."""
    return float(np.max(alphas @ belief))


def stage_vectors(sol: Solution, t: int, r: int, fresh: bool, c: int) -> Alphas:
    """The vectors of CONTINUE (or REPLAN) at ``stages``, plan class ``c``, after step t."""
    model = sol.model
    j = t + 1
    if not model.can_start(j, r, fresh):
        return np.full((1, model.n_states), -model.w_failure)
    r_after = r + 1 if fresh else r
    c_next = model.replan_class() if fresh else c
    cost = model.w_tokens * model.step_tokens(j, r, fresh)
    if fresh:
        cost += model.w_replan / model.horizon
    mats = outcome_matrices(model, model.class_quality(c_next, j, r, fresh))
    nxt = sol.at_stages[j][r_after][c_next]
    out: np.ndarray = backup(mats, nxt, sol.beliefs[t]) - cost
    return out


def entry_values(
    sol: Solution,
    j: int,
    r_after: int,
    prior: np.ndarray,
    cls: np.ndarray,
    obs: np.ndarray | None = None,
) -> np.ndarray:
    """Value on reaching ``stages`` at step j, before its reading, per cell of ``cls``.

    ``obs``: P(reading bin | state) of the entering step (default: the model's
    readings; an early entry's are cut at ``early_threshold``).
    """
    if obs is None:
        obs = sol.model.reading_probs()  # [state, bin]
    out = np.empty(cls.shape)
    for c in np.unique(cls):
        alphas = sol.at_stages[j][r_after][int(c)]
        idx = cls == c
        joint = prior[idx][:, None, :] * obs.T[None, :, :]  # [cell, bin, state]
        out[idx] = (joint @ alphas.T).max(axis=2).sum(axis=1)
    return out


def step_values(sol: Solution, t: int, r: int, *, fresh: bool, first: bool = False) -> np.ndarray:
    """Values below ``stages`` of taking step t + 1 from the Reflect after step t.

    ``fresh``: the step runs a new plan (a REPLAN, or the episode's first step when
    ``first``); returns the value array over (m, a, b) (constant in a, b when fresh).
    """
    model = sol.model
    j = t + 1
    r_after = r if first or not fresh else r + 1
    if not model.can_start(j, r, fresh):
        return np.full(sol.below.shape[2:], -model.w_failure)
    cost = model.w_tokens * model.step_tokens(j, r, fresh)
    if fresh and not first:
        cost += model.w_replan / model.horizon
    replanned = r_after > 0
    tab = tables(model)
    th_all = theta(model, tab, j, r, fresh, replanned)  # [a, b]
    prior = entry_prior(model, tab, j, r, fresh, replanned)
    cls = tab.classes[replanned]
    nxt = sol.below[j, r_after]  # [m, a, b]
    k = model.stages
    phi = model.fail
    early = _early_unproductive(sol, j, r, fresh, r_after)  # {m: (chance, value)} [a, b]
    if fresh:
        th = th_all[0, 0]
        prod = np.empty(k)
        prod[: k - 1] = nxt[1:, 1, 0]
        prod[k - 1] = entry_values(sol, j, r_after, prior[1:2, 0:1], cls[1:2, 0:1])[0, 0]
        unprod_f = nxt[:, 0, 1].copy()
        for m, (chance, value) in early.items():
            unprod_f[m] = (1 - chance[0, 1]) * unprod_f[m] + chance[0, 1] * value[0, 1]
        q = -cost + phi * nxt[:, 0, 0] + (1 - phi) * (th * prod + (1 - th) * unprod_f)
        return np.broadcast_to(q[:, None, None], nxt.shape).copy()
    unprod = np.empty_like(nxt)
    unprod[:, :, :-1] = nxt[:, :, 1:]
    unprod[:, :, -1] = nxt[:, :, -1]
    for m, (chance, value) in early.items():  # both at the counts after the step: shift b
        ch = np.concatenate([chance[:, 1:], chance[:, -1:]], axis=1)
        val = np.concatenate([value[:, 1:], value[:, -1:]], axis=1)
        unprod[m] = (1 - ch) * unprod[m] + ch * val
    prod = np.empty_like(nxt)
    prod[: k - 1, :-1, :] = nxt[1:, 1:, :]
    prod[: k - 1, -1, :] = nxt[1:, -1, :]
    entry = entry_values(sol, j, r_after, prior, cls)  # at the counts after the step
    prod[k - 1, :-1, :] = entry[1:, :]
    prod[k - 1, -1, :] = entry[-1, :]
    out: np.ndarray = (
        -cost + phi * nxt + (1 - phi) * (th_all[None] * prod + (1 - th_all[None]) * unprod)
    )
    return out


def _early_unproductive(
    sol: Solution, j: int, r: int, fresh: bool, r_after: int
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """For each m of ``early_stages``: the chance and the value of an early entry.

    Both over the counts (a, b) after the unproductive step j: the chance is the line
    at the law's quality there, the value that of entering with the early entry's
    prior and its cut readings, with the plan's class there.
    """
    model = sol.model
    if not model.early_stages:
        return {}
    replanned = r_after > 0
    tab = tables(model)
    cells = (slice(0, 1), slice(0, 2)) if fresh else (slice(None), slice(None))  # fresh: (0, 1)
    qe = law_quality(model, tab, j, r, fresh, replanned)[cells]
    cls = tab.classes[replanned][cells]
    obs = model.early_reading_probs()[:, model.early_bin() :]  # the bins it can read
    out = {}
    for i, m in enumerate(model.early_stages):
        prior = entry_prior(model, tab, j, r, fresh, replanned, early=i)[cells]
        out[m] = (model.early_chance_at(i, qe), entry_values(sol, j, r_after, prior, cls, obs))
    return out


def solve(model: BayesModel, beliefs: Mapping[int, np.ndarray] | None = None) -> Solution:
    """Backward induction over the whole horizon (see the module docstring).

    Args:
        model: The model.
        beliefs: The beliefs of the point-based backups at the Reflect after each
            step (default: the grid of resolution ``model.belief_points`` at every
            step; the corners are always added).

    Returns:
        The values below ``stages``, the vectors at it, and the solve time.
    """
    start = time.perf_counter()
    h, k, nc, s = model.horizon, model.stages, model.quality_classes, model.n_states
    if beliefs is None:  # one grid (one object: the memo below keys on it) at every step
        grid = np.unique(
            np.vstack([np.eye(s), belief_grid(s, max(1, model.belief_points))]), axis=0
        )
        points = dict.fromkeys(range(1, h + 1), grid)
    else:
        points = {t: np.unique(np.vstack([np.eye(s), b]), axis=0) for t, b in beliefs.items()}
    n = h + 2
    below = np.full((h + 2, h + 2, k, n, n), -model.w_failure)
    terminals = [model.terminal(c) for c in range(nc)]
    at_stages: list[list[list[Alphas]]] = [
        [list(terminals) for _ in range(h + 2)] for _ in range(h + 2)
    ]
    sol = Solution(model, below, at_stages, points)
    memo: dict[tuple[Any, ...], tuple[Alphas, Alphas, Alphas]] = {}
    for t in range(h - 1, 0, -1):
        for r in range(0, min(t, h + 1)):
            rep: Alphas | None = None
            for c in range(nc):
                key = (id(points[t]), model.kappa(c), *_stage_key(model, t, r, c, at_stages))
                found = memo.get(key)
                if found is None:
                    cont = stage_vectors(sol, t, r, False, c)
                    if rep is None:
                        rep = stage_vectors(sol, t, r, True, c)
                    vectors = best_vectors(np.vstack([cont, rep, terminals[c]]), points[t])
                    found = memo[key] = (cont, rep, vectors)
                sol.actions[(t, r, False, c)], sol.actions[(t, r, True, c)] = found[:2]
                at_stages[t][r][c] = found[2]
            cont_v = sol.step_vector(t, r, False)
            rep_v = sol.step_vector(t, r, True)
            below[t, r] = np.maximum(np.maximum(cont_v, rep_v), -model.w_failure)
    sol.seconds = time.perf_counter() - start
    return sol


def _stage_key(
    model: BayesModel, t: int, r: int, c: int, at: list[list[list[Alphas]]]
) -> tuple[Any, ...]:
    """What the vectors at (t, r, c) depend on: costs, rates, feasibility, successors."""
    j = t + 1
    parts: list[Any] = []
    for fresh, r_after in ((False, r), (True, r + 1)):
        c_next = model.replan_class() if fresh else c
        ok = model.can_start(j, r, fresh)
        parts.append(ok)
        if ok:
            parts.append(round(model.w_tokens * model.step_tokens(j, r, fresh), 12))
            parts.append(round(model.class_quality(c_next, j, r, fresh), 12))
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


def reachable_beliefs(model: BayesModel, digits: int = 12) -> dict[int, np.ndarray]:
    """Every belief at ``stages`` some history can reach (for small models: it grows fast).

    The entry beliefs of every (step, replans, plan kind, counts) and reading, then
    every successor by each outcome and reading under every plan class, to the
    horizon.  Backed up at these beliefs, the point-based DP is exact at each of them.

    Args:
        model: A small model.
        digits: Rounding that merges equal beliefs.

    Returns:
        The distinct beliefs at the Reflect after each step: {step: [point, state]}.
    """
    tab, obs, h = tables(model), model.reading_probs(), model.horizon
    by_step: dict[int, set[tuple[float, ...]]] = {j: set() for j in range(1, h + 1)}

    early_obs = model.early_reading_probs() if model.early_stages else obs

    def add(j: int, pre: np.ndarray, reads: np.ndarray = obs) -> None:
        for y in range(reads.shape[1]):
            post = pre * reads[:, y]
            if post.sum() > 0:
                by_step[j].add(tuple(np.round(post / post.sum(), digits)))

    for j in range(1, h + 1):
        for r in range(j):
            for fresh in (False, True):
                for replanned in (False, True):
                    prior = entry_prior(model, tab, j, r, fresh, replanned)
                    for a in range(1, j + 1):
                        for b in range(j - a + 1):
                            add(j, prior[a, b])
                    for i in range(len(model.early_stages)):  # after an unproductive step
                        early = entry_prior(model, tab, j, r, fresh, replanned, early=i)
                        for a in range(j):
                            for b in range(1, j - a + 1):
                                add(j, early[a, b], early_obs)
        if j >= h - 1:  # no backups at the horizon's Reflect: its beliefs are not needed
            break
        for belief in list(by_step[j]):
            vec = np.asarray(belief)
            for r in range(j + 1):
                for fresh in (False, True):
                    for c in range(model.quality_classes):
                        unprod, prod = model.stage_moves(model.class_quality(c, j + 1, r, fresh))
                        add(j + 1, vec)  # a failed step
                        add(j + 1, vec @ unprod)
                        add(j + 1, vec @ prod)
    return {
        j: np.asarray(sorted(found)) if found else np.eye(model.n_states)
        for j, found in by_step.items()
    }
