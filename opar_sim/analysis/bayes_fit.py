"""The fitting protocol of ``bayes``'s chain at ``stages`` (docs/bayes.md, "Fitting").

Run ``bayes`` on flight_booking's tuning seed, label every step with what the
simulator knows (the visible progress after the step, whether the task was
complete, the plan's effective quality) and with the law's own quality of the plan
at that step, and fit the chain's lines (``controllers.bayes.fit.fit_chain``).  The
fit depends on the law that made the steps, so ``fit`` repeats: fit, rebuild the
law with the fitted chain, collect again (the shipped chain is the second round
from the earlier law's steps).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from controllers.bayes import FAILED_ACT, BayesModel, BayesReflector
from controllers.bayes.fit import LabelledStep, fit_chain, state_of
from controllers.bayes.solve import effective, tables
from opar_sim.core.controller import ReflectContext, TruthProbe
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import Evaluation
from opar_sim.experiment.build import build
from opar_sim.experiment.spec import ExperimentSpec

# the chain the shipped one was refitted from (issue 12): the five-state chain fitted on
# 600 episodes of seed 100 before it (``refit_shipped`` starts from it)
_PREVIOUS_LEVELS: Any = (
    ((0.0, 0.05), (0.1, 0.692), (0.2, 0.258)),
    ((0.3, 0.23), (0.4, 0.77)),
    ((0.5, 0.122), (0.6, 0.878)),
    ((0.75, 0.058), (0.8, 0.942)),
    ((1.0, 1.0),),
)
_PREVIOUS_ENTRY: Any = (
    (0.041, -0.05),
    (0.675, -0.821),
    (0.4, -0.141),
    (0.246, -0.251),
    (-0.361, 1.264),
)
# per source state, for each destination: (destination, unproductive), (destination, productive)
_PREVIOUS_MOVES: tuple[Any, ...] = (
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
_PREVIOUS_KAPPA = 0.971
_PREVIOUS_PRODUCTIVE: Any = (0.325, 0.387)


class _Labeller(BayesReflector):
    """``bayes`` that also reads the truth probe, to label its own steps."""

    def __init__(self, model: BayesModel, sink: list[LabelledStep]) -> None:
        super().__init__(productive_act=0.8)
        self._model = model
        self.sink = sink
        self.probe: TruthProbe | None = None
        self.state = -1

    def bind_truth(self, probe: TruthProbe) -> None:
        """Receive the episode's truth probe."""
        self.probe = probe

    def reset(self) -> None:
        """Back to the first step's belief."""
        super().reset()
        self.state = -1

    def observe(self, evaluation: Evaluation, ctx: ReflectContext) -> None:
        """Update the belief as ``bayes`` does; record the step with its labels."""
        model = self.model
        j, r, fresh = self._next
        before = self.m
        law_q = model.class_quality(self.c, j, r, fresh) if before >= model.stages else 0.0
        super().observe(evaluation, ctx)
        if before < model.stages <= self.m:  # entry: the posterior mean's effective quality
            tab, kind = tables(model), ctx.replans > 0
            a, b = min(self.a, model.horizon + 1), min(self.b, model.horizon + 1)
            law_q = float(tab.post[kind][a, b] @ effective(model, tab.support[kind], j, r, fresh))
        assert self.probe is not None
        truth = self.probe()
        # the visible progress after the step (what the agent's δ_task is read from): the
        # task behind the probe is the episode's (opar_sim.core.loop._Probe)
        visible = float(self.probe.task.observe().visible_progress)  # type: ignore[attr-defined]
        after = state_of(visible) if self.m >= model.stages else -1
        failed = evaluation.delta_act < FAILED_ACT
        kind_ = "fail" if failed else ("prod" if evaluation.delta_act >= 0.8 else "unprod")
        self.sink.append(
            LabelledStep(self.state, after, kind_, law_q, truth.quality, visible, truth.complete)
        )
        self.state = after


def labelled_steps(
    spec: ExperimentSpec,
    model: BayesModel,
    episodes: int,
    seed: int,
    feasible_only: bool = False,
) -> tuple[list[LabelledStep], float]:
    """Run the law of ``model`` on ``spec``'s task; every step, labelled; the success rate.

    Args:
        spec: A flight_booking spec (its first controller is not used).
        model: The law's model.
        episodes: Episodes to run.
        seed: Their base seed (the tuning seed, 100).
        feasible_only: Keep only the steps of episodes whose world was feasible at
            the first step (the model's chain describes feasible worlds; their share
            is ``BayesModel.p_feasible``).

    Returns:
        The labelled steps and the share of episodes that succeeded (all of them).
    """
    parts = build(spec)
    task, agent = parts.make_task(), parts.make_agent()
    steps: list[LabelledStep] = []
    wins = 0
    for i in range(episodes):
        sink: list[LabelledStep] = []
        law = _Labeller(model, sink)
        result = run_episode(task, agent, law, parts.limits, episode_seed(seed, i), episode=i)
        wins += result.success
        if not feasible_only or (result.steps and result.steps[0].feasible):
            steps.extend(sink)
    return steps, wins / max(episodes, 1)


def fitted_model(model: BayesModel, fit: dict[str, Any]) -> BayesModel:
    """``model`` with the chain, κ and the productive line of ``fit``."""

    def plain(x: Any) -> Any:
        return tuple(plain(v) for v in x) if isinstance(x, (tuple, list)) else float(x)

    return dataclasses.replace(
        model,
        levels=plain(fit["levels"]),
        entry=plain(fit["entry"]),
        moves=plain(fit["moves"]),
        kappa_base=float(fit["kappa"]),
        productive_base=float(fit["productive"][0]),
        productive_gain=float(fit["productive"][1]),
    )


def fit(
    spec: ExperimentSpec,
    model: BayesModel,
    episodes: int = 600,
    seed: int = 100,
    rounds: int = 2,
    feasible_only: bool = False,
) -> tuple[BayesModel, list[float]]:
    """Fit the chain on ``seed`` by rounds of collect-and-fit from ``model``'s law.

    Args:
        spec: A flight_booking spec.
        model: The starting model (its law makes the first round's steps).
        episodes: Episodes per round.
        seed: The tuning seed.
        rounds: Rounds of collect, fit.
        feasible_only: Fit on the episodes of feasible worlds only (``labelled_steps``).

    Returns:
        The fitted model and each round's simulated success (of the law that collected).
    """
    rates = []
    for _ in range(rounds):
        steps, rate = labelled_steps(spec, model, episodes, seed, feasible_only)
        rates.append(rate)
        model = fitted_model(model, fit_chain(steps))
    return model, rates


def refit_shipped(
    episodes: int = 2000, rounds: int = 2, seed: int = 100
) -> tuple[BayesModel, list[float]]:
    """The protocol that made the shipped chain (docs/bayes.md, "Fitting").

    flight_booking's spec with ``bayes`` (failure-only objective), starting from the
    chain shipped before the refit (``_PREVIOUS_*``), ``rounds`` rounds of ``episodes`` episodes on
    the tuning seed, fitted on feasible worlds only.

    Args:
        episodes: Episodes per round.
        rounds: Rounds of collect, fit.
        seed: The tuning seed.

    Returns:
        The fitted model and each round's simulated success; ``fitted_source`` prints
        its ``FITTED_*`` constants.
    """
    from controllers.bayes import model_from
    from opar_sim.experiment.build import load_spec
    from opar_sim.experiment.edit import apply_changes

    spec = load_spec("experiments/flight_booking.toml")
    spec = apply_changes(spec, {"controller": {"name": "bayes", "params": {}}}, "bayes_fit")
    law = build(spec).controllers[0][1]()
    assert isinstance(law, BayesReflector)
    start = dataclasses.replace(
        model_from(law._info, law.overrides),
        levels=_PREVIOUS_LEVELS,
        entry=_PREVIOUS_ENTRY,
        moves=_PREVIOUS_MOVES,
        kappa_base=_PREVIOUS_KAPPA,
        productive_base=_PREVIOUS_PRODUCTIVE[0],
        productive_gain=_PREVIOUS_PRODUCTIVE[1],
    )
    return fit(spec, start, episodes, seed, rounds, feasible_only=True)


def fitted_source(model: BayesModel) -> str:
    """The ``FITTED_*`` constants of ``model`` as Python source (controllers/bayes/model.py).

    Args:
        model: A fitted model.

    Returns:
        The assignments of ``FITTED_LEVELS``, ``FITTED_ENTRY``, ``FITTED_MOVES``,
        ``FITTED_KAPPA`` and ``FITTED_PRODUCTIVE``.
    """
    lines = [f"FITTED_LEVELS = {model.levels!r}", f"FITTED_ENTRY = {model.entry!r}"]
    lines.append(f"FITTED_MOVES = {model.moves!r}")
    lines.append(f"FITTED_KAPPA = {model.kappa_base!r}")
    lines.append(f"FITTED_PRODUCTIVE = {(model.productive_base, model.productive_gain)!r}")
    return "\n".join(lines)


__all__ = ["fit", "fitted_model", "fitted_source", "labelled_steps", "refit_shipped"]
