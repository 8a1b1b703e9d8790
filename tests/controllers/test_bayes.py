"""The Bayes-optimal law: its DP against exhaustive search, its value against its own model."""

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
    envelope,
    envelope_sum,
    model_from,
    solve,
)
from environments.base import ToolParams
from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.core.controller import ReflectContext
from opar_sim.core.types import ControlSignal, Evaluation

# a tiny model: 4 steps, 2 stages, 3 reading bins, 5 quality values, exact envelopes
TINY = BayesModel(
    horizon=4,
    token_budget=10**9,
    w_failure=1.0,
    w_tokens=2e-6,
    w_replan=0.05,
    quality_points=5,
    stages=2,
    rho_base=0.1,
    rho_gain=0.7,
    done_base=0.05,
    done_gain=0.5,
    spurious=0.2,
    undo_base=0.3,
    undo_gain=-0.25,
    kappa_base=0.6,
    kappa_gain=0.4,
    quality_classes=3,
    reading_bins=3,
    belief_points=0,
    context_decay=0.0,
    productive_base=0.1,
    productive_gain=0.8,
    token_margin=0.0,
)


def test_defaults_are_the_simulated_agent_and_tools() -> None:
    agent = SimulatedAgentParams().model_dump()
    assert {k: agent[k] for k in AGENT_DEFAULTS} == AGENT_DEFAULTS
    assert {k: v for k, v in ToolParams().model_dump().items() if k in TOOL_DEFAULTS} == (
        TOOL_DEFAULTS
    )


def test_envelope_is_the_pointwise_max() -> None:
    rng = np.random.default_rng(3)
    grid = np.linspace(0, 1, 2001)
    for _ in range(50):
        v0, v1 = rng.normal(size=(2, 40))
        e0, e1 = envelope(v0, v1)
        brute = np.max(np.outer(1 - grid, v0) + np.outer(grid, v1), axis=1)
        np.testing.assert_allclose(
            np.max(np.outer(1 - grid, e0) + np.outer(grid, e1), axis=1), brute, atol=1e-12
        )
        w0, w1 = rng.normal(size=(2, 30))
        s0, s1 = envelope_sum((e0, e1), envelope(w0, w1))
        brute_w = np.max(np.outer(1 - grid, w0) + np.outer(grid, w1), axis=1)
        np.testing.assert_allclose(
            np.max(np.outer(1 - grid, s0) + np.outer(grid, s1), axis=1),
            brute + brute_w,
            atol=1e-12,
        )


def _exhaustive(model: BayesModel) -> float:
    """Expectimax over the whole history tree, from the hidden states (no belief statistic).

    The history's unnormalised joint weights over (the plan's quality value, Z) are
    propagated by the generative model itself; the best action is chosen at every
    history, which is the best of all history-dependent policies.  At ``stages`` the
    model's rates depend on the class of the plan's posterior mean on entry (a
    function of the history, computed here from the weights themselves).
    """
    o0, o1 = model.reading_probs()
    priors = {kind: model.prior(kind) for kind in (False, True)}
    k, phi = model.stages, model.fail
    Weights = dict[tuple[float, int], float]

    def eff(q: float, j: int, r: int, fresh: bool) -> float:
        return max(model.quality_floor, q * model.decay(j, r, fresh))

    def stop(weights: Weights, m: int, c: int) -> float:
        total = sum(weights.values())
        looks = sum(w for (_, z), w in weights.items() if z == 1) if m == k else 0.0
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
        if fresh:  # a new plan: its quality drawn afresh, Z kept
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
        # outcomes: (kind, reading bin or None) -> next weights
        nexts: dict[tuple[str, int | None], Weights] = {}

        def add(key: tuple[str, int | None], hidden: tuple[float, int], wt: float) -> None:
            if wt > 0:
                bucket = nexts.setdefault(key, {})
                bucket[hidden] = bucket.get(hidden, 0.0) + wt

        c_entry = c
        if (
            m == k - 1
        ):  # the class on reaching stages: of the posterior mean after a productive step
            num = den = 0.0
            for (q, _), wt in weights.items():
                th = model.productive_base + model.productive_gain * eff(q, j, r, fresh)
                num += q * wt * th
                den += wt * th
            c_entry = model.quality_class(num / den)
        done, spur, undo = model.stage_rates(c, j, r, fresh)
        for (q, z), wt in weights.items():
            if m < k:
                th = model.productive_base + model.productive_gain * eff(q, j, r, fresh)
                if m + 1 < k:
                    add(("prod", None), (q, 0), wt * (1 - phi) * th)
                else:
                    rho = float(model.rho_of(eff(q, j, r, fresh)))
                    for y in range(len(o0)):
                        add(("prod", y), (q, 0), wt * (1 - phi) * th * (1 - rho) * o0[y])
                        add(("prod", y), (q, 1), wt * (1 - phi) * th * rho * o1[y])
                add(("fail", None), (q, 0), wt * phi)
                add(("unprod", None), (q, 0), wt * (1 - phi) * (1 - th))
            else:
                obs = {0: o0, 1: o1}
                moves: list[tuple[str, int, float]] = [("fail", z, phi)]
                if z == 0:
                    moves += [
                        ("prod", 1, (1 - phi) * done),
                        ("prod", 0, (1 - phi) * spur),
                        ("unprod", 0, (1 - phi) * (1 - done - spur)),
                    ]
                else:
                    moves += [
                        ("unprod", 0, (1 - phi) * undo),
                        ("unprod", 1, (1 - phi) * (1 - undo)),
                    ]
                for kind, z2, pr in moves:
                    for y in range(len(o0)):
                        add((kind, y), (q, z2), wt * pr * obs[z2][y])
        value = -cost * total
        for (kind, _), nxt in nexts.items():
            m2 = min(m + 1, k) if kind == "prod" else m
            c2 = c_entry if m < k and m2 == k else c
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
    exact = _exhaustive(TINY)
    assert solve(TINY).start_value() == pytest.approx(exact, abs=1e-12)


def test_dp_equals_exhaustive_search_with_a_binding_token_budget() -> None:
    tight = BayesModel(**{**TINY.__dict__, "token_budget": 14_000, "horizon": 5})
    assert not tight.can_start(4, 0, False)  # the budget, not the step limit, ends it
    assert solve(tight).start_value() == pytest.approx(_exhaustive(tight), abs=1e-12)


def test_point_based_backups_are_within_1e4_of_exact() -> None:
    exact = BayesModel(horizon=6, belief_points=0)
    pointwise = BayesModel(horizon=6, belief_points=257)
    assert solve(pointwise).start_value() == pytest.approx(solve(exact).start_value(), abs=1e-4)


def _model_episode(law: BayesReflector, model: BayesModel, rng: np.random.Generator) -> float:
    """One episode of the model's own generative process, decided by ``law``: its objective."""
    law.reset()
    support, w = model.prior(False)
    q = float(rng.choice(support, p=w))
    m, z, c, replans, age, tokens = 0, 0, 0, 0, 0, 0.0
    fresh = True
    sigma0 = math.hypot(model.noise, model.incomplete_spread)
    for t in range(1, model.horizon + 1):
        r_before = replans - 1 if fresh and t > 1 else replans  # this step's REPLAN excluded
        if not model.can_start(t, r_before, fresh):
            return model.w_failure + model.w_tokens * tokens
        tokens += model.step_tokens(t, r_before, fresh)
        age = 1 if fresh else age + 1
        qe = max(model.quality_floor, q * model.decay(t, r_before, fresh))
        u = rng.random()
        if u < model.fail:
            act = 0.1
        elif m < model.stages:
            if rng.random() < model.productive_base + model.productive_gain * qe:
                act, m = 1.0, m + 1
                if m == model.stages:
                    z = int(rng.random() < float(model.rho_of(qe)))
            else:
                act = 0.6
        else:
            done, spur, undo = model.stage_rates(c, t, r_before, fresh)
            v = rng.random()
            if z == 0:
                act = 1.0 if v < done + spur else 0.6
                z = int(v < done)
            else:
                act = 0.6
                z = int(v >= undo)
        mu, sd = (
            (1.0 + model.bias, model.noise) if z else (model.incomplete_level + model.bias, sigma0)
        )
        reading = min(1.0, max(0.0, mu + sd * rng.standard_normal()))
        ev = Evaluation(reading, act, 0.0, reading, "", ())
        ctx = ReflectContext(t, float(t), 1.0, age, False, replans)
        decision = law.decide(ev, ctx)
        if m == model.stages:  # the class is a function of the history: read the law's
            c = law.c
        if decision.signal is ControlSignal.TERMINATE:
            success = m >= model.stages and z == 1 and rng.random() < model.kappa(c)
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


def test_predicted_value_matches_the_models_own_simulation() -> None:
    """The DP's value before the first step is the mean objective of its own model.

    A 99 % normal interval of 3,000 model episodes (replans are charged per step
    in the episode, per max_steps in the DP: zero weight here keeps them equal).
    """
    law = BayesReflector(reading_bins=10, quality_points=41)
    law.bind_model(
        _info(max_steps=8, objective={"failure": 1.0, "tokens": 2e-6, "replan_rate": 0.0})
    )
    model = law.model
    predicted = -law.solution.start_value()
    rng = np.random.default_rng(11)
    scores = np.array([_model_episode(law, model, rng) for _ in range(3000)])
    half = 2.576 * scores.std(ddof=1) / math.sqrt(len(scores))
    assert abs(scores.mean() - predicted) <= half, (scores.mean(), predicted, half)


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
    from opar_sim.experiment.build import build, load_spec
    from opar_sim.experiment.edit import apply_changes

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


@pytest.mark.parametrize("a,b", list(product([0, 3], [0, 5])))
def test_more_failures_never_raise_the_value_of_continuing(a: int, b: int) -> None:
    sol = solve(BayesModel(horizon=8, reading_bins=8, quality_points=21))
    below = sol.below[3, 0, 1]
    assert below[a, b] >= below[a, b + 1] - 1e-12


def test_bayes_refuses_a_task_its_model_does_not_describe():
    from opar_sim.experiment.build import load_spec, parse_spec
    from opar_sim.experiment.spec import SpecError
    from tests.conftest import EXPERIMENTS

    data = load_spec(EXPERIMENTS / "research_qa_faults.toml").model_dump()
    data["controller"] = {"name": "bayes", "params": {}}
    with pytest.raises(SpecError, match="bayes models flight_booking with the simulated agent"):
        parse_spec(data, "test")
