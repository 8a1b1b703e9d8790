"""bayes, the Bayes decision on an approximate model of the loop: its DP against exhaustive
search, its value against its own model and against the simulator."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest

import controllers
from controllers.bayes import (
    AGENT_DEFAULTS,
    TOOL_DEFAULTS,
    BayesModel,
    BayesReflector,
    belief_grid,
    model_from,
    solve,
)
from controllers.bayes.fit import LabelledStep, fit_chain, line, state_of
from controllers.bayes.law import p_feasible
from controllers.bayes.solve import (
    backup,
    effective,
    outcome_matrices,
    reachable_beliefs,
    tables,
)
from environments.base import ToolParams
from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Evaluation

# a tiny model: 4 steps, 2 stages, 3 hidden states at stages (one read through a mixture
# of two levels), 3 reading bins, 5 quality values, rates linear in the plan's quality
TINY = BayesModel(
    horizon=4,
    token_budget=10**9,
    w_failure=1.0,
    w_tokens=2e-6,
    w_replan=0.05,
    quality_points=5,
    stages=2,
    levels=(((0.2, 1.0),), ((0.6, 0.5), (0.8, 0.5)), ((1.0, 1.0),)),
    entry=((0.5, -0.4), (0.3, 0.0), (0.2, 0.4)),
    moves=(
        ((0.6, -0.3), (0.1, 0.0), (0.0, 0.0), (0.2, 0.2), (0.0, 0.0), (0.1, 0.1)),
        ((0.1, 0.0), (0.0, 0.0), (0.5, -0.3), (0.1, 0.0), (0.0, 0.0), (0.2, 0.4)),
        ((0.05, 0.0), (0.0, 0.0), (0.15, -0.1), (0.0, 0.0), (0.8, 0.1), (0.0, 0.0)),
    ),
    kappa_base=0.6,
    kappa_gain=0.4,
    quality_classes=3,
    reading_bins=1,
    context_decay=0.0,
    productive_base=0.1,
    productive_gain=0.8,
    token_margin=0.0,
    early_stages=(),
)


# the same with the early entry: at m = 1 an unproductive step reading 0.5 or more (the
# upper of 2 bins, or exactly 1) enters the chain, with a quality-dependent chance and entry
TINY_EARLY = BayesModel(
    **{
        **TINY.__dict__,
        "reading_bins": 2,
        "early_stages": (1,),
        "early_threshold": 0.5,
        "early_chance": ((0.2, 0.5),),
        "early_entry": (((0.3, -0.2), (0.4, 0.0), (0.3, 0.2)),),
    }
)


def test_defaults_are_the_simulated_agent_and_tools() -> None:
    agent = SimulatedAgentParams().model_dump()
    assert {k: agent[k] for k in AGENT_DEFAULTS} == AGENT_DEFAULTS
    assert {k: v for k, v in ToolParams().model_dump().items() if k in TOOL_DEFAULTS} == (
        TOOL_DEFAULTS
    )


def test_the_belief_grid_is_the_simplex_at_its_resolution() -> None:
    grid = belief_grid(4, 6)
    assert len(grid) == math.comb(6 + 3, 3)  # stars and bars
    np.testing.assert_allclose(grid.sum(axis=1), 1.0, atol=1e-15)
    assert (grid >= 0).all() and len(np.unique(grid, axis=0)) == len(grid)
    assert {tuple(row) for row in np.eye(4)} <= {tuple(row) for row in grid}
    np.testing.assert_array_equal(np.sort(belief_grid(2, 4)[:, 1]), [0.0, 0.25, 0.5, 0.75, 1.0])


def test_a_point_based_backup_is_the_best_one_step_lookahead_at_its_beliefs() -> None:
    """At each belief b: b · backup = Σ_outcomes max_vectors b · (M_o α), by brute force."""
    rng = np.random.default_rng(5)
    mats = outcome_matrices(TINY, 0.4)
    nxt = rng.normal(size=(7, TINY.n_states))
    beliefs = rng.dirichlet(np.ones(TINY.n_states), size=25)
    out = backup(mats, nxt, beliefs)
    for b, vec in zip(beliefs, out, strict=True):
        brute = sum(max(float(b @ (mat @ a)) for a in nxt) for mat in mats)
        assert float(b @ vec) == pytest.approx(brute, abs=1e-12)
    # the outcome matrices are a distribution over (outcome, next state, reading)
    np.testing.assert_allclose(mats.sum(axis=(0, 2)), 1.0, atol=1e-12)


def _exhaustive(model: BayesModel) -> float:
    """Expectimax over the whole history tree, from the hidden states (no belief statistic).

    The history's unnormalised joint weights over (the plan's quality value, the
    state at ``stages``) are propagated by the generative model itself; the best
    action is chosen at every history, which is the best of all history-dependent
    policies.  At ``stages`` the rates depend on the class of the plan's posterior mean
    on entry (a function of the history, computed here from the weights themselves).
    """
    obs = model.reading_probs()
    priors = {kind: model.prior(kind) for kind in (False, True)}
    k, phi, last = model.stages, model.fail, model.n_states - 1
    Weights = dict[tuple[float, int], float]

    def eff(q: float, j: int, r: int, fresh: bool) -> float:
        return max(model.quality_floor, q * model.decay(j, r, fresh))

    def stop(weights: Weights, m: int, c: int) -> float:
        total = sum(weights.values())
        looks = sum(w for (_, z), w in weights.items() if z == last) if m == k else 0.0
        return -model.w_failure * (total - model.kappa(c) * looks)

    def step(t: int, r: int, m: int, c: int, weights: Weights, fresh: bool, first: bool) -> float:
        j = t + 1
        total = sum(weights.values())
        if not model.can_start(j, r, fresh):
            return -model.w_failure * total
        cost = model.w_tokens * model.step_tokens(j, r, fresh)
        if fresh and not first:
            cost += model.w_replan / model.horizon
        r_after = r if first or not fresh else r + 1
        if fresh:  # a new plan: its quality drawn afresh, the state kept
            support, w = priors[r_after > 0]
            by_z: dict[int, float] = {}
            for (_, z), wt in weights.items():
                by_z[z] = by_z.get(z, 0.0) + wt
            weights = {}
            for z, wz in by_z.items():
                for q, wq in zip(support, w, strict=True):  # equal values after clipping add up
                    weights[(float(q), z)] = weights.get((float(q), z), 0.0) + wz * float(wq)
            if m == k:
                c = model.replan_class()
        nexts: dict[tuple[str, int | None], Weights] = {}

        def add(key: tuple[str, int | None], hidden: tuple[float, int], wt: float) -> None:
            if wt > 0:
                bucket = nexts.setdefault(key, {})
                bucket[hidden] = bucket.get(hidden, 0.0) + wt

        def theta(q: float) -> float:
            return model.productive_base + model.productive_gain * eff(q, j, r, fresh)

        c_entry = c
        if m == k - 1:  # the class on entry: of the posterior mean after a productive step
            num = den = 0.0
            for (q, _), wt in weights.items():
                num += q * wt * theta(q)
                den += wt * theta(q)
            c_entry = model.quality_class(num / den)
        early = model.early_index(m) if m < k else None
        chance, c_early = 0.0, c
        if early is not None:  # the law's quality and class after an unproductive step
            num = num_e = den = 0.0
            for (q, _), wt in weights.items():
                num += q * wt * (1 - theta(q))
                num_e += eff(q, j, r, fresh) * wt * (1 - theta(q))
                den += wt * (1 - theta(q))
            chance = float(model.early_chance_at(early, np.array(num_e / den)))
            c_early = model.quality_class(num / den)
        early_obs = model.early_reading_probs()
        unprod, prod = model.stage_moves(model.class_quality(c, j, r, fresh))
        for (q, z), wt in weights.items():
            if m < k:
                th = theta(q)
                if m + 1 < k:
                    add(("prod", None), (q, 0), wt * (1 - phi) * th)
                else:
                    enter = model.entry_probs(np.array(eff(q, j, r, fresh)))
                    for z2 in range(model.n_states):
                        for y in range(obs.shape[1]):
                            add(("prod", y), (q, z2), wt * (1 - phi) * th * enter[z2] * obs[z2, y])
                add(("fail", None), (q, 0), wt * phi)
                add(("unprod", None), (q, 0), wt * (1 - phi) * (1 - th) * (1 - chance))
                if early is not None:
                    enter = model.entry_probs(np.array(eff(q, j, r, fresh)), early)
                    for z2 in range(model.n_states):
                        for y in range(obs.shape[1]):
                            pr = wt * (1 - phi) * (1 - th) * chance * enter[z2] * early_obs[z2, y]
                            add(("early", y), (q, z2), pr)
            else:
                for y in range(obs.shape[1]):
                    add(("fail", y), (q, z), wt * phi * obs[z, y])
                    for z2 in range(model.n_states):
                        for kind, mat in (("unprod", unprod), ("prod", prod)):
                            pr = wt * (1 - phi) * mat[z, z2] * obs[z2, y]
                            add((kind, y), (q, z2), pr)
        value = -cost * total
        for (kind, _), nxt in nexts.items():
            m2 = min(m + 1, k) if kind == "prod" else (k if kind == "early" else m)
            c2 = c_entry if m < k and m2 == k else c
            if kind == "early":
                c2 = c_early
            value += best(j, r_after, m2, c2, nxt)
        return value

    def best(t: int, r: int, m: int, c: int, weights: Weights) -> float:
        options = [stop(weights, m, c)]
        if t < model.horizon:
            options.append(step(t, r, m, c, weights, fresh=False, first=False))
            options.append(step(t, r, m, c, weights, fresh=True, first=False))
        else:
            options.append(-model.w_failure * sum(weights.values()))  # truncated
        return max(options)

    return step(0, 0, 0, 0, {(0.0, 0): 1.0}, fresh=True, first=True)


def test_dp_equals_exhaustive_search_on_a_tiny_horizon() -> None:
    """Backed up at every reachable belief, the point-based DP is exact (1e-12)."""
    exact = _exhaustive(TINY)
    beliefs = reachable_beliefs(TINY)
    assert solve(TINY, beliefs).start_value() == pytest.approx(exact, abs=1e-12)
    # backed up at the corners alone it is a lower bound (every vector is a real
    # policy's value), and here a strict one: the check can tell
    corners = {t: b[:0] for t, b in beliefs.items()}
    assert solve(TINY, corners).start_value() < exact - 1e-3


def test_dp_equals_exhaustive_search_with_the_early_entry() -> None:
    """The same with an early entry at m = 1; without the early entry's branch it differs."""
    exact = _exhaustive(TINY_EARLY)
    assert solve(TINY_EARLY, reachable_beliefs(TINY_EARLY)).start_value() == pytest.approx(
        exact, abs=1e-12
    )
    plain = BayesModel(**{**TINY_EARLY.__dict__, "early_stages": ()})
    assert abs(_exhaustive(plain) - exact) > 1e-3


def test_dp_equals_exhaustive_search_with_a_binding_token_budget() -> None:
    tight = BayesModel(**{**TINY.__dict__, "token_budget": 11_000})
    # the budget, not the step limit, ends it: step 4 never starts, a replan's step 3 neither
    assert tight.can_start(3, 0, False) and not tight.can_start(3, 1, True)
    assert not tight.can_start(4, 0, False)
    exact = _exhaustive(tight)
    assert solve(tight, reachable_beliefs(tight)).start_value() == pytest.approx(exact, abs=1e-12)


def test_the_flight_booking_grid_is_close_to_a_finer_one() -> None:
    """The default grid (resolution 6) against resolution 4, on 8 steps: within 1e-4.

    (Measured: 1.3e-5 at 8 steps, 3.4e-4 at 20; resolution 8 is 9e-6 from 6 at 8 steps
    but takes minutes.)
    """
    base = model_from(_info(max_steps=8), BayesReflector().overrides)
    coarse = solve(base).start_value()  # belief_points = 6
    coarser = solve(BayesModel(**{**base.__dict__, "belief_points": 4})).start_value()
    assert coarse == pytest.approx(coarser, abs=1e-4)


def _model_episode(law: BayesReflector, model: BayesModel, rng: np.random.Generator) -> float:
    """One episode of the model's own generative process, decided by ``law``: its objective."""
    law.reset()
    support, w = model.prior(False)
    q = float(rng.choice(support, p=w))
    m, z, c, replans, age, tokens = 0, 0, 0, 0, 0, 0.0
    fresh = True
    early_reading: float | None = None
    n = model.n_states
    for t in range(1, model.horizon + 1):
        r_before = replans - 1 if fresh and t > 1 else replans  # this step's REPLAN excluded
        if not model.can_start(t, r_before, fresh):
            return model.w_failure + model.w_tokens * tokens
        tokens += model.step_tokens(t, r_before, fresh)
        age = 1 if fresh else age + 1
        qe = max(model.quality_floor, q * model.decay(t, r_before, fresh))
        if rng.random() < model.fail:
            act = 0.1
        elif m < model.stages:
            if rng.random() < model.productive_base + model.productive_gain * qe:
                act, m = 1.0, m + 1
                if m == model.stages:
                    z = int(rng.choice(n, p=model.entry_probs(np.array(qe))))
            else:
                act = 0.6
                early = model.early_index(m)
                if early is not None:  # the chance is the law's: at its counts after the step
                    tab, kind = tables(model), replans > 0
                    a, b = (0, 1) if age == 1 else (law.a, law.b + 1)
                    a, b = min(a, model.horizon + 1), min(b, model.horizon + 1)
                    law_q = float(
                        tab.post[kind][a, b]
                        @ effective(model, tab.support[kind], t, r_before, fresh)
                    )
                    if rng.random() < float(model.early_chance_at(early, np.array(law_q))):
                        m = model.stages
                        z = int(rng.choice(n, p=model.entry_probs(np.array(qe), early)))
                        y = int(
                            rng.choice(model.reading_bins + 2, p=model.early_reading_probs()[z])
                        )
                        early_reading = (
                            1.0 if y == model.reading_bins + 1 else (y - 0.5) / model.reading_bins
                        )
        else:
            unprod, prod = model.stage_moves(model.class_quality(c, t, r_before, fresh))
            k = int(rng.choice(2 * n, p=np.concatenate([unprod[z], prod[z]])))
            act, z = (1.0 if k >= n else 0.6), k % n
        reading = 0.3  # below stages the law reads δ_task only for an early entry
        if early_reading is not None:
            reading, early_reading = early_reading, None
        elif m == model.stages:
            levels, shares = zip(*model.levels[z], strict=True)
            level = levels[int(rng.choice(len(levels), p=np.asarray(shares) / sum(shares)))]
            reading = min(1.0, max(0.0, level + model.bias + model.noise * rng.standard_normal()))
        ev = Evaluation(reading, act, 0.0, reading, "", ())
        decision = law.decide(ev, ReflectContext(t, float(t), 1.0, age, False, replans))
        if m == model.stages:  # the class is a function of the history: read the law's
            c = law.c
        if decision.signal is ControlSignal.TERMINATE:
            success = m >= model.stages and z == n - 1 and rng.random() < model.kappa(c)
            return (
                model.w_failure * (not success)
                + model.w_tokens * tokens
                + (model.w_replan * replans / t)
            )
        fresh = decision.signal is ControlSignal.REPLAN
        if fresh:
            replans += 1
            support, w = model.prior(True)
            q = float(rng.choice(support, p=w))
            if m == model.stages:
                c = model.replan_class()
    return model.w_failure + model.w_tokens * tokens  # truncated at the step limit


def _own_check(max_steps: int, episodes: int, **law: float) -> tuple[float, float, float]:
    """The DP's predicted objective, its own process's mean, and the 99 % half-width."""
    reflector = BayesReflector(**law)  # type: ignore[arg-type]
    reflector.bind_model(
        _info(max_steps=max_steps, objective={"failure": 1.0, "tokens": 2e-6, "replan_rate": 0.0})
    )
    model = reflector.model
    predicted = -reflector.solution.start_value()
    rng = np.random.default_rng(11)
    scores = np.array([_model_episode(reflector, model, rng) for _ in range(episodes)])
    return predicted, float(scores.mean()), 2.576 * scores.std(ddof=1) / math.sqrt(episodes)


def test_predicted_value_matches_the_models_own_simulation() -> None:
    """The DP's value before the first step is the mean objective of its own model.

    A 99 % normal interval of 3,000 model episodes of 8 steps (replans are charged
    per step in the episode, per max_steps in the DP: zero weight here keeps them equal).
    """
    predicted, mean, half = _own_check(8, 3000, reading_bins=10, quality_points=41)
    assert abs(mean - predicted) <= half, (mean, predicted, half)


@pytest.mark.slow
def test_predicted_value_matches_the_models_own_simulation_at_20_steps() -> None:
    """The same at flight_booking's 20 steps (context decay binds), 2,000 episodes."""
    predicted, mean, half = _own_check(20, 2000)
    assert abs(mean - predicted) <= half, (mean, predicted, half)


@pytest.mark.slow
def test_predicted_success_is_inside_the_simulators_interval_on_a_held_out_seed() -> None:
    """The law's predicted success at the first Reflect against real episodes.

    flight_booking, failure-only objective, 400 episodes of seed 7 (the chain was
    fitted on seed 100 only) through ``simulate`` (run_episode with the spec's
    parts): the prediction (P(feasible) · the DP's success) must be inside the 99 %
    Wilson interval of the simulated success (99 %: the prediction carries the fit's
    own sampling error from the tuning episodes, which the interval of the check does
    not).  Seed and level were chosen before the first run and kept when the model
    changed (also with the early entry).  This is a regression guard, not a proof
    that the model is exact: with the early entry the prediction (81.4 %) is inside
    the 95 % intervals of seeds 200 (600 episodes: 81.0 % [77.7, 83.9]), 7 (82.8 %
    [78.7, 86.1]) and 300 (2,000: 81.7 % [79.9, 83.3]) and of the three pooled; before
    it (83.5 %) it was outside those of seeds 200 and 300 and of the pool
    (docs/notes/bayes.md, "Predicted against simulated").
    """
    from opar_sim.measure.stats import wilson_interval
    from opar_sim.running.runner import simulate
    from opar_sim.spec.build import load_spec
    from opar_sim.spec.edit import apply_changes

    spec = load_spec("experiments/flight_booking.toml")
    spec = apply_changes(spec, {"controller": {"name": "bayes", "params": {}}}, "test")
    results = list(simulate(spec, episodes=400, seed=7))
    law = BayesReflector()
    law.bind_model(_info())
    predicted = law.solution.predicted_success()  # p_feasible · (1 − P(failure | feasible))
    wins = sum(r.success for r in results)
    low, high = wilson_interval(wins, len(results), z=2.575829)
    assert low <= predicted <= high, (predicted, wins / len(results), low, high)


@pytest.mark.parametrize(
    "params", [{}, {"earliest_hour": 15, "n_flights": 4}, {"infeasible_rate": 0.2, "n_flights": 3}]
)
def test_p_feasible_is_the_share_of_the_tasks_worlds_with_a_valid_flight(
    params: dict[str, float],
) -> None:
    """The formula against 10,000 worlds drawn by flight_booking: inside their 99.9 % interval."""
    import simpy

    from environments.flight_booking import FlightBooking
    from opar_sim.measure.stats import wilson_interval

    task = FlightBooking(**params)
    n, feasible = 10_000, 0
    for i in range(n):
        task.reset(simpy.Environment(), np.random.default_rng(i), np.random.default_rng(n + i))
        feasible += task.feasible
    low, high = wilson_interval(feasible, n, z=3.290527)
    assert low <= p_feasible(params) <= high, (feasible / n, p_feasible(params))
    assert model_from(None, {}).p_feasible == p_feasible({})


def test_the_fit_recovers_known_lines() -> None:
    """Steps made from known proportions: the least-squares lines are those proportions."""
    steps = []
    for q, n_done in ((0.2, 1), (0.5, 4), (0.8, 7)):  # P(done) = −0.1 + 1.0·q exactly
        for i in range(10):
            after = 4 if i < n_done else 2
            steps.append(LabelledStep(2, after, "prod", q, q, 0.6, i < n_done))
            steps.append(LabelledStep(-1, after, "prod", q, q, 1.0, True))
    # κ counts the arrivals at looks complete, not the steps spent there: two arrivals
    # from a wrong booking that are not complete, then six complete steps that stay
    steps += [LabelledStep(3, 4, "prod", 0.5, 0.5, 1.0, False)] * 2
    steps += [LabelledStep(4, 4, "unprod", 0.5, 0.5, 1.0, True)] * 6
    fit = fit_chain(steps)
    assert fit["kappa"] == round(24 / 26, 3)  # 12 + 12 complete arrivals, 2 not
    moves = fit["moves"]
    assert moves[2][2 * 4 + 1] == pytest.approx((-0.1, 1.0))  # near -> done, productive
    assert moves[2][2 * 2 + 1] == pytest.approx((1.1, -1.0))  # near -> near, productive
    assert fit["entry"][4] == pytest.approx((-0.1, 1.0))
    sums = [sum(b for b, _ in moves[2]), sum(g for _, g in moves[2])]
    assert sums == pytest.approx([1.0, 0.0])  # one source's lines sum to 1
    assert line(np.array([0.3, 0.3]), np.array([0.0, 1.0])) == (0.5, 0.0)
    # the early entry: its event is the reading, whether or not the law entered on it
    early = []
    for q, n_hit in ((0.2, 1), (0.5, 4), (0.8, 7)):  # P(event) = −0.1 + 1.0·q exactly
        for i in range(10):
            after, visible = (4, 1.0) if i < n_hit // 2 else (-1, 0.8 if i < n_hit else 0.6)
            early.append(
                LabelledStep(-1, after, "unprod", q, q, visible, False, 3, 17 - 9 * (i >= n_hit))
            )
    early.append(LabelledStep(-1, -1, "unprod", 0.5, 0.5, 0.4, False, 1, 20))  # not at m = 3
    found = fit_chain(early, early_stages=(3,), early_bin=16)
    assert found["early_chance"][0] == pytest.approx((-0.1, 1.0))
    assert found["early_counts"] == ((30, 12),)
    shares = {k: line_ for k, line_ in enumerate(found["early_entry"][0]) if line_ != (0.0, 0.0)}
    assert set(shares) == {3, 4}  # wrong (0.8) and looks complete (1.0), by the visible level
    assert fit_chain(early)["early_chance"] == ()
    assert [state_of(v) for v in (0.1, 0.4, 0.6, 0.8, 1.0)] == [0, 1, 2, 3, 4]


def _info(max_steps: int = 20, objective: dict[str, float] | None = None):  # type: ignore[no-untyped-def]
    from opar_sim.core.controller import ModelInfo

    return ModelInfo(
        task="flight_booking",
        agent_kind="simulated",
        max_steps=max_steps,
        token_budget=200_000,
        time_budget=600.0,
        agent=SimulatedAgentParams().model_dump(),
        task_params={"tools": ToolParams().model_dump()},
        objective=objective or {"failure": 1.0, "tokens": 0.0, "replan_rate": 0.0},
    )


def test_the_build_binds_the_specs_model() -> None:
    from opar_sim.spec.build import build, load_spec
    from opar_sim.spec.edit import apply_changes

    spec = load_spec("experiments/flight_booking.toml")
    spec = apply_changes(
        spec,
        {
            "controller": {"name": "bayes", "params": {}},
            "agent": {"kind": "simulated", "params": {"bias": 0.15}},
            "limits": {"max_steps": 9},
        },
        "test",
    )
    law = build(spec).controllers[0][1]()
    assert isinstance(law, BayesReflector)
    assert law.model.horizon == 9 and law.model.bias == 0.15
    # the task's tool faults: timeout chance of the log-normal latency, then failures
    z = math.log(2.0 / 0.3) / 0.6
    p_timeout = 0.5 * math.erfc(z / math.sqrt(2))
    assert law.model.fail == pytest.approx(p_timeout + (1 - p_timeout) * 0.05, rel=1e-12)


def test_it_follows_the_controller_contract() -> None:
    law_factory = lambda: controllers.make("bayes", reading_bins=8, quality_points=21)  # noqa: E731
    controllers.check_controller(law_factory, "bayes", episodes=4, steps=12)


def test_model_from_without_a_spec_is_the_agents_defaults() -> None:
    model = model_from(None, {})
    assert model.horizon == 20 and model.alpha == 1.2 and model.w_failure == 1.0
    assert model.p_right == pytest.approx(
        0.5 * (math.erf(0.1 / (math.sqrt(2) * 0.1)) - math.erf(-0.2 / (math.sqrt(2) * 0.1)))
    )


def test_stops_on_a_sure_completion_and_never_stops_at_stage_zero_early() -> None:
    law = BayesReflector(reading_bins=10, quality_points=21)
    law.bind_model(_info(max_steps=10))
    law.reset()
    ctx = lambda t, age: ReflectContext(t, float(t), 1.0, age, False, 0)  # noqa: E731
    first = law.decide(Evaluation(0.2, 1.0, 0.0, 0.2, "", ()), ctx(1, 1))
    assert first.signal is not ControlSignal.TERMINATE  # a replan is free here: it may take one
    for t in range(2, 5):  # three more productive steps: stage 4, read as exactly done
        d = law.decide(Evaluation(1.0, 1.0, 0.0, 1.0, "", ()), ctx(t, t))
    assert d.terms["stage"] == 4 and not d.give_up
    # steps are free here, so one more reading may be worth taking; a done task's next
    # steps look unproductive and read exactly 1: it stops within three of them
    for t in range(5, 8):
        if d.signal is ControlSignal.TERMINATE:
            break
        d = law.decide(Evaluation(1.0, 0.6, 0.0, 1.0, "", ()), ctx(t, t))
    assert d.signal is ControlSignal.TERMINATE and not d.give_up
    assert d.terms["p_done"] > 0.9


def test_a_high_reading_below_stages_enters_the_chain_early() -> None:
    """Three productive steps, then an unproductive one reading exactly 1: the chain is entered.

    Without the early entry the law stays below ``stages`` (it does not read δ_task there).
    """
    ctx = lambda t, age: ReflectContext(t, float(t), 1.0, age, False, 0)  # noqa: E731
    for early, stage in ((True, 4.0), (False, 3.0)):
        law = BayesReflector(early_entry=early)
        law.bind_model(_info())
        law.reset()
        assert (law.model.early_stages == (2, 3)) is early
        for t in range(1, 4):
            law.decide(Evaluation(0.4, 1.0, 0.0, 0.4, "", ()), ctx(t, t))
        d = law.decide(Evaluation(1.0, 0.6, 0.0, 1.0, "", ()), ctx(4, 4))
        assert d.terms["stage"] == stage
    assert d.terms["p_looks_done"] == 0.0
    law = BayesReflector()
    law.bind_model(_info())
    law.reset()
    for t in range(1, 4):
        law.decide(Evaluation(0.4, 1.0, 0.0, 0.4, "", ()), ctx(t, t))
    d = law.decide(Evaluation(1.0, 0.6, 0.0, 1.0, "", ()), ctx(4, 4))
    assert d.terms["p_looks_done"] > 0.5  # an exact 1 reads a booking that looks complete
    # a reading under the threshold is a plain unproductive step
    law.reset()
    for t in range(1, 4):
        law.decide(Evaluation(0.4, 1.0, 0.0, 0.4, "", ()), ctx(t, t))
    d = law.decide(Evaluation(0.7, 0.6, 0.0, 0.7, "", ()), ctx(4, 4))
    assert d.terms["stage"] == 3.0 and d.terms["unproductive"] == 1.0


@pytest.mark.parametrize("a,b", list(product([0, 3], [0, 5])))
def test_more_failures_never_raise_the_value_of_continuing(a: int, b: int) -> None:
    sol = solve(BayesModel(horizon=8, reading_bins=8, quality_points=21, belief_points=3))
    below = sol.below[3, 0, 1]
    assert below[a, b] >= below[a, b + 1] - 1e-12


def test_bayes_refuses_a_task_its_model_does_not_describe():
    from opar_sim.spec.build import load_spec, parse_spec
    from opar_sim.spec.schema import SpecError
    from tests.conftest import EXPERIMENTS

    data = load_spec(EXPERIMENTS / "research_qa_faults.toml").model_dump()
    data["controller"] = {"name": "bayes", "params": {}}
    with pytest.raises(SpecError, match="bayes models flight_booking with the simulated agent"):
        parse_spec(data, "test")
