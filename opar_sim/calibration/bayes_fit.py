"""The fitting protocol of ``bayes``'s chain at ``stages`` (docs/notes/bayes.md, "Fitting").

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
from opar_sim.spec.build import build
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.seeds import TUNING_SEED

# the chain the shipped one was refitted from (issue 12, the early entry): the five-state
# chain shipped before it, without the early entry (``refit_shipped`` starts from it)
_PREVIOUS_LEVELS: Any = (
    ((0.0, 0.024), (0.1, 0.621), (0.2, 0.355)),
    ((0.3, 0.252), (0.4, 0.748)),
    ((0.5, 0.143), (0.6, 0.857)),
    ((0.75, 0.043), (0.8, 0.957)),
    ((1.0, 1.0),),
)
_PREVIOUS_ENTRY: Any = (
    (0.031, -0.04),
    (0.562, -0.672),
    (0.574, -0.411),
    (0.241, -0.245),
    (-0.408, 1.368),
)
# per source state, for each destination: (destination, unproductive), (destination, productive)
_PREVIOUS_MOVES: Any = (
    (
        (0.831, -0.535),
        (0.031, -0.007),
        (0.0, 0.0),
        (0.137, 0.542),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
    ),
    (
        (0.25, -0.19),
        (0.0, 0.0),
        (0.68, -0.388),
        (-0.015, 0.136),
        (0.0, 0.0),
        (0.001, 0.511),
        (0.0, 0.0),
        (0.061, -0.051),
        (0.0, 0.0),
        (0.023, -0.019),
    ),
    (
        (0.006, -0.009),
        (0.0, 0.0),
        (0.204, -0.187),
        (0.0, 0.0),
        (0.783, -0.632),
        (0.079, -0.062),
        (0.0, 0.0),
        (0.146, -0.117),
        (0.0, 0.0),
        (-0.219, 1.008),
    ),
    (
        (0.012, 0.004),
        (0.0, 0.0),
        (0.173, -0.132),
        (0.0, 0.0),
        (0.121, 0.375),
        (0.0, 0.0),
        (0.656, -0.221),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.038, -0.026),
    ),
    (
        (0.0, 0.0),
        (0.0, 0.0),
        (0.088, -0.109),
        (0.0, 0.0),
        (0.25, -0.264),
        (0.0, 0.0),
        (-0.007, 0.015),
        (0.0, 0.0),
        (0.669, 0.358),
        (0.0, 0.0),
    ),
)
_PREVIOUS_KAPPA = 0.956
_PREVIOUS_PRODUCTIVE: Any = (0.317, 0.413)


# the counts m below ``stages`` of the early entry: bookings are made there on seed 100
# (docs/notes/bayes.md, "The early entry")
EARLY_STAGES = (2, 3)


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
        if before < model.stages:  # below: the posterior mean's effective quality after the step
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
        stage = before if before < model.stages else -1
        self.sink.append(
            LabelledStep(
                self.state,
                after,
                kind_,
                law_q,
                truth.quality,
                visible,
                truth.complete,
                stage,
                model.reading_bin(evaluation.delta_task),
            )
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
        early_stages=tuple(int(m) for m in fit.get("early_stages", model.early_stages)),
        early_chance=plain(fit.get("early_chance", model.early_chance)),
        early_entry=plain(fit.get("early_entry", model.early_entry)),
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
    seed: int = TUNING_SEED,
    rounds: int = 2,
    feasible_only: bool = False,
    early_stages: tuple[int, ...] | None = None,
) -> tuple[BayesModel, list[float]]:
    """Fit the chain on ``seed`` by rounds of collect-and-fit from ``model``'s law.

    Args:
        spec: A flight_booking spec.
        model: The starting model (its law makes the first round's steps).
        episodes: Episodes per round.
        seed: The tuning seed.
        rounds: Rounds of collect, fit.
        feasible_only: Fit on the episodes of feasible worlds only (``labelled_steps``).
        early_stages: The counts m of the early entry to fit (None: ``model``'s); its
            threshold is ``model``'s ``early_threshold``.

    Returns:
        The fitted model and each round's simulated success (of the law that collected).
    """
    early = model.early_stages if early_stages is None else tuple(early_stages)
    rates = []
    for _ in range(rounds):
        steps, rate = labelled_steps(spec, model, episodes, seed, feasible_only)
        rates.append(rate)
        found = fit_chain(steps, early_stages=early, early_bin=model.early_bin())
        model = fitted_model(model, {**found, "early_stages": early})
    return model, rates


def refit_shipped(
    episodes: int = 2000, rounds: int = 2, seed: int = TUNING_SEED
) -> tuple[BayesModel, list[float]]:
    """The protocol that made the shipped chain (docs/notes/bayes.md, "Fitting").

    flight_booking's spec with ``bayes`` (failure-only objective), starting from the
    chain shipped before the refit (``_PREVIOUS_*``, no early entry: the first round's
    law enters only at ``stages``), ``rounds`` rounds of ``episodes`` episodes on the
    tuning seed, fitted on feasible worlds only, with the early entry at m = 2 and 3
    (``EARLY_STAGES``; its threshold is ``BayesModel.early_threshold``, 0.75).

    Args:
        episodes: Episodes per round.
        rounds: Rounds of collect, fit.
        seed: The tuning seed.

    Returns:
        The fitted model and each round's simulated success; ``fitted_source`` prints
        its ``FITTED_*`` constants.
    """
    from controllers.bayes import model_from
    from opar_sim.spec.build import load_spec
    from opar_sim.spec.edit import apply_changes

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
        early_stages=(),
    )
    return fit(spec, start, episodes, seed, rounds, feasible_only=True, early_stages=EARLY_STAGES)


def fitted_source(model: BayesModel) -> str:
    """The ``FITTED_*`` constants of ``model`` as Python source (controllers/bayes/model.py).

    Args:
        model: A fitted model.

    Returns:
        The assignments of ``FITTED_LEVELS``, ``FITTED_ENTRY``, ``FITTED_MOVES``,
        ``FITTED_KAPPA``, ``FITTED_PRODUCTIVE`` and the early entry's
        ``FITTED_EARLY_STAGES``, ``FITTED_EARLY_CHANCE`` and ``FITTED_EARLY_ENTRY``.
    """
    lines = [f"FITTED_LEVELS = {model.levels!r}", f"FITTED_ENTRY = {model.entry!r}"]
    lines.append(f"FITTED_MOVES = {model.moves!r}")
    lines.append(f"FITTED_KAPPA = {model.kappa_base!r}")
    lines.append(f"FITTED_PRODUCTIVE = {(model.productive_base, model.productive_gain)!r}")
    lines.append(f"FITTED_EARLY_STAGES = {model.early_stages!r}")
    lines.append(f"FITTED_EARLY_CHANCE = {model.early_chance!r}")
    lines.append(f"FITTED_EARLY_ENTRY = {model.early_entry!r}")
    return "\n".join(lines)


__all__ = ["fit", "fitted_model", "fitted_source", "labelled_steps", "refit_shipped"]
