"""Gains tuned on training seeds and scored honestly on held-out seeds: the tune protocol's core.

Every trial runs the same training seed set (common random numbers, so trials
are compared on paired samples).  The best gains found are then re-scored on
a held-out seed set beside the spec's own gains, because best-of-N on the
training seeds is biased upward; the difference comes with a paired
bootstrap interval.

The objective, minimised, is per episode
``failure·(1 − success) + tokens·n_tokens + replan_rate·replans/steps``,
averaged over episodes, with the weights given in the spec.

With a ``confirm`` evaluation (``tune --engine batch``) the search screens
with a fast evaluation (the lockstep batch engine) and the best ``finalists``
trials are re-scored with ``confirm`` (the SimPy engine, the reference) on the
same training seed (``opar_sim.studies.finalists``); the best confirmed trial is
returned, and the held-out scoring runs on ``confirm`` too.  ``TuneResult`` is
what ``opar_sim.studies.tune`` returns: its tables, its verdict and ``tune.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from opar_sim.measure.table import TextTable
from opar_sim.running.search import Evaluate, importances, minimize, paired_bootstrap
from opar_sim.spec.schema import Objective, TuneSpec
from opar_sim.studies.finalists import Finalist, Trial, confirm_finalists, mean_score, success_rate


@dataclass
class Holdout:
    """Defaults and best gains on the same held-out seeds."""

    default_score: float
    best_score: float
    improvement: float  # default − best: > 0 means the tuned gains are better
    improvement_ci95: tuple[float, float]
    default_success: float
    best_success: float


@dataclass
class TuneResult:
    """The outcome of ``tune``: the best gains, every trial and the held-out comparison.

    ``best_train_score`` is on the confirming engine when there are finalists,
    else on the one engine the trials ran on.
    """

    best_params: dict[str, float]
    best_train_score: float
    holdout: Holdout
    trials: list[Trial] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)
    finalists: list[Finalist] = field(default_factory=list)

    def table(self) -> TextTable:
        """Training and held-out scores of the best gains against the spec's own."""
        h = self.holdout
        lo, hi = h.improvement_ci95
        columns = ["gains", "train objective", "held-out objective", "held-out success"]
        rows = [
            ["spec defaults", "", f"{h.default_score:.4f}", f"{h.default_success:.1%}"],
            [
                "tuned (best)",
                f"{self.best_train_score:.4f}",
                f"{h.best_score:.4f}",
                f"{h.best_success:.1%}",
            ],
        ]
        notes = [
            f"held-out improvement {h.improvement:+.4f} (95% CI {lo:+.4f} to {hi:+.4f}, "
            "paired bootstrap over episodes)"
        ]
        if self.finalists:
            notes.append(
                "train objective of the best: its SimPy-engine re-score; held-out scores: "
                "SimPy engine"
            )
        title = "tuning result (objective: lower is better)"
        return TextTable(title, columns, rows, notes, left=0, bold=False)

    def finalist_table(self) -> TextTable:
        """The screened trials the SimPy engine re-scored: both engines' training objectives."""
        columns = ["trial", "batch objective (screen)", "SimPy objective", "SimPy success"]
        best = min(self.finalists, key=lambda f: (f.score, f.number))
        rows = [
            [
                f"#{f.number}" + (" (best)" if f is best else ""),
                f"{f.screen_score:.4f}",
                f"{f.score:.4f}",
                f"{f.success_rate:.1%}",
            ]
            for f in self.finalists
        ]
        note = (
            f"{len(self.trials)} trials screened on the batch engine; the {len(rows)} best "
            "re-scored on the SimPy engine, same training seed; the lowest SimPy objective wins"
        )
        return TextTable("finalists", columns, rows, [note], left=1, bold=False)

    def to_dict(self) -> dict[str, Any]:
        """What ``tune.json`` holds: the best gains, their scores, importances, finalists."""
        summary: dict[str, Any] = {
            "best_params": self.best_params,
            "best_train_score": self.best_train_score,
            "holdout": asdict(self.holdout),
            "importances": self.importances,
        }
        if self.finalists:
            summary["engines"] = {"trials": "batch", "finalists": "simpy", "holdout": "simpy"}
            summary["finalists"] = [asdict(f) for f in self.finalists]
        return summary


def tune_gains(
    spec: TuneSpec,
    evaluate: Evaluate,
    seed: int,
    on_trial: Callable[[Trial], None] | None = None,
    *,
    storage: Any = None,
    resume: bool = False,
    confirm: Evaluate | None = None,
    finalists: int = 5,
) -> TuneResult:
    """Search the space with Optuna on the training seeds, then score on held-out seeds.

    Args:
        spec: The ``[tune]`` table: space, objective, trials, seeds.
        evaluate: ``evaluate(params, episodes, seed)`` runs the spec with ``params``
            applied (None: the spec's own values) and returns the episode rows.
        seed: The training seed (and the sampler's).
        on_trial: Called with each finished trial (the resumed ones included).
        storage: An Optuna storage keeping the trials (``journal_storage``).
        resume: Finish the study kept in ``storage``.
        confirm: An evaluation of reference (the SimPy engine) when ``evaluate``
            screens (the batch engine): the best ``finalists`` distinct trials are
            re-scored with it on the training seed, the best of those wins, and
            the held-out scoring uses it.
        finalists: How many screened trials ``confirm`` re-scores.

    Returns:
        The best parameters, their training score and the held-out comparison.
    """
    trials: list[Trial] = []

    def objective(params: dict[str, float]) -> tuple[float, dict[str, Any]]:
        rows = evaluate(params, spec.train_episodes, seed)
        score = mean_score(spec.objective, rows)
        return score, {"success_rate": success_rate(rows)}

    last_rate = [0.0]

    def scored_objective(params: dict[str, float]) -> tuple[float, dict[str, Any]]:
        score, attrs = objective(params)
        last_rate[0] = attrs["success_rate"]
        return score, attrs

    def record(number: int, params: dict[str, float], score: float) -> None:
        trial = Trial(number, params, score, last_rate[0])
        trials.append(trial)
        if on_trial is not None:
            on_trial(trial)

    study, scored = minimize(
        spec.space,
        scored_objective,
        spec.trials,
        seed,
        sampler=spec.sampler,
        storage=storage,
        resume=resume,
        on_trial=record,
    )
    if len(trials) < len(scored):  # the trials a resumed study already had
        from optuna.trial import TrialState

        kept = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        earlier = [
            Trial(k, dict(t.params), float(t.value), float(t.user_attrs.get("success_rate", 0.0)))
            for k, t in enumerate(kept[: len(scored) - len(trials)])
        ]
        trials[:0] = earlier
    best = min(trials, key=lambda t: (t.score, t.number))
    best_params, best_score = best.params, best.score
    confirmed: list[Finalist] = []
    reference = evaluate
    if confirm is not None:
        reference = confirm
        confirmed = confirm_finalists(
            spec.objective, spec.train_episodes, trials, confirm, seed, finalists
        )
        winner = min(confirmed, key=lambda f: (f.score, f.number))
        best_params, best_score = winner.params, winner.score
    default_rows = reference(None, spec.holdout_episodes, spec.holdout_seed)
    best_rows = reference(best_params, spec.holdout_episodes, spec.holdout_seed)
    return TuneResult(
        best_params=best_params,
        best_train_score=best_score,
        holdout=compare_holdout(spec.objective, default_rows, best_rows, seed),
        trials=trials,
        importances=importances(study) if len(spec.space) > 1 else {},
        finalists=confirmed,
    )


def compare_holdout(
    objective: Objective,
    default_rows: Sequence[Mapping[str, Any]],
    best_rows: Sequence[Mapping[str, Any]],
    seed: int,
) -> Holdout:
    """Score both on the same held-out episodes; pair them by episode index."""
    default_rows = sorted(default_rows, key=lambda r: int(r["episode"]))
    best_rows = sorted(best_rows, key=lambda r: int(r["episode"]))
    d = [objective.episode_score(r) for r in default_rows]
    b = [objective.episode_score(r) for r in best_rows]
    return Holdout(
        default_score=float(np.mean(d)),
        best_score=float(np.mean(b)),
        improvement=float(np.mean(d) - np.mean(b)),
        improvement_ci95=paired_bootstrap(d, b, seed),
        default_success=success_rate(default_rows),
        best_success=success_rate(best_rows),
    )


def toml_snippet(params: Mapping[str, float]) -> str:
    """The best values as TOML tables, ready to paste into a spec."""
    tables: dict[str, list[str]] = {}
    for path, value in params.items():
        table, _, key = path.rpartition(".")
        text = str(value) if isinstance(value, int) else f"{value:.6g}"
        tables.setdefault(table, []).append(f"{key} = {text}")
    return "\n\n".join(f"[{t}]\n" + "\n".join(lines) for t, lines in tables.items()) + "\n"


def holdout_verdict(result: TuneResult) -> str:
    """What the held-out seeds say about the tuned gains, above the gains themselves.

    "Paste these" only when the tuned gains beat the spec's defaults on the
    held-out seeds with a 95 % interval above zero; otherwise what happened.
    """
    h = result.holdout
    lo, hi = h.improvement_ci95
    scores = (
        f"held-out objective {h.best_score:.4f} tuned against {h.default_score:.4f} for the "
        f"spec's defaults (lower is better; improvement {h.improvement:+.4f}, "
        f"95% CI {lo:+.4f} to {hi:+.4f})"
    )
    if lo > 0:
        return (
            f"best gains: better than the defaults on held-out seeds, {scores}; paste into a spec:"
        )
    if hi < 0:
        return (
            f"best gains: WORSE than the spec's defaults on held-out seeds, {scores}: they fit "
            "the training seeds only; keep the defaults (more training episodes or trials may "
            "help). The tuned gains, for reference only:"
        )
    side = "better" if h.improvement > 0 else "worse"
    return (
        f"best gains: not distinguishable from the spec's defaults on held-out seeds (the mean "
        f"is {side}), {scores}; keep the defaults unless more held-out episodes show a gain. "
        "The tuned gains, for reference only:"
    )
