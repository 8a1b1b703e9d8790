"""One tuning replicate: Optuna searches a spec's gains on one training seed.

Every trial of a replicate runs the same training episodes (common random numbers, so
its trials are compared on paired samples); the best trial (lowest objective) is the
replicate's setting.  Best-of-N on the training episodes is biased upward, and the
training seed and the sampler seed are random factors, so a replicate's setting is one
draw: ``opar_sim.studies.tune`` runs R replicates, races their settings against the
incumbent on fresh episodes and scores them held out (``opar_sim.studies.recommend``).

The objective, minimised, is per episode
``failure·(1 − success) + tokens·n_tokens + replan_rate·replans/steps``,
averaged over episodes, with the weights given in the spec.

With a ``confirm`` evaluation (``tune --engine batch``) the search screens with a fast
evaluation (the lockstep batch engine) and the best ``finalists`` trials are re-scored
with ``confirm`` (the SimPy engine, the reference) on the same training episodes
(``opar_sim.studies.finalists``); the best confirmed trial is the replicate's setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from opar_sim.running.search import Evaluate, importances, minimize
from opar_sim.spec.schema import TuneSpec
from opar_sim.studies.finalists import Finalist, Trial, confirm_finalists, mean_score, success_rate


@dataclass
class Replicate:
    """One replicate's search: its seeds, its best setting and every trial.

    ``best_train_score`` is on the confirming engine when there are finalists, else on
    the one engine the trials ran on.
    """

    index: int  # r, its place among the replicates
    train_seed: int
    sampler_seed: int
    best_params: dict[str, float]
    best_train_score: float
    trials: list[Trial] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)
    finalists: list[Finalist] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Its seeds, best setting, training score, importances and finalists."""
        out: dict[str, Any] = {
            "replicate": self.index,
            "train_seed": self.train_seed,
            "sampler_seed": self.sampler_seed,
            "trials": len(self.trials),
            "best_params": self.best_params,
            "best_train_score": self.best_train_score,
            "importances": self.importances,
        }
        if self.finalists:
            out["finalists"] = [asdict(f) for f in self.finalists]
        return out


def search_replicate(
    spec: TuneSpec,
    evaluate: Evaluate,
    train_seed: int,
    sampler_seed: int,
    on_trial: Callable[[Trial], None] | None = None,
    *,
    index: int = 0,
    storage: Any = None,
    resume: bool = False,
    confirm: Evaluate | None = None,
    finalists: int = 5,
) -> Replicate:
    """Search the space with Optuna on one training seed: one replicate.

    Args:
        spec: The ``[tune]`` table: space, objective, trials, training episodes.
        evaluate: ``evaluate(params, episodes, seed)`` runs the spec with ``params``
            applied (None: the spec's own values) and returns the episode rows.
        train_seed: The spec seed of the training episodes.
        sampler_seed: The sampler's seed.
        on_trial: Called with each finished trial (the resumed ones included).
        index: The replicate's number r.
        storage: An Optuna storage keeping the trials (``journal_storage``).
        resume: Finish the study kept in ``storage``.
        confirm: An evaluation of reference (the SimPy engine) when ``evaluate``
            screens (the batch engine): the best ``finalists`` distinct trials are
            re-scored with it on the training seed and the best of those wins.
        finalists: How many screened trials ``confirm`` re-scores.

    Returns:
        The replicate: its best setting, its training score and every trial.
    """
    trials: list[Trial] = []
    last_rate = [0.0]

    def objective(params: dict[str, float]) -> tuple[float, dict[str, Any]]:
        rows = evaluate(params, spec.train_episodes, train_seed)
        last_rate[0] = success_rate(rows)
        return mean_score(spec.objective, rows), {"success_rate": last_rate[0]}

    def record(number: int, params: dict[str, float], score: float) -> None:
        trial = Trial(number, params, score, last_rate[0])
        trials.append(trial)
        if on_trial is not None:
            on_trial(trial)

    study, scored = minimize(
        spec.space,
        objective,
        spec.trials,
        sampler_seed,
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
        if on_trial is not None:
            for trial in earlier:
                on_trial(trial)
    best = min(trials, key=lambda t: (t.score, t.number))
    best_params, best_score = best.params, best.score
    confirmed: list[Finalist] = []
    if confirm is not None:
        confirmed = confirm_finalists(
            spec.objective, spec.train_episodes, trials, confirm, train_seed, finalists
        )
        winner = min(confirmed, key=lambda f: (f.score, f.number))
        best_params, best_score = winner.params, winner.score
    return Replicate(
        index=index,
        train_seed=train_seed,
        sampler_seed=sampler_seed,
        best_params=best_params,
        best_train_score=best_score,
        trials=trials,
        importances=importances(study) if len(spec.space) > 1 else {},
        finalists=confirmed,
    )


def toml_snippet(params: Mapping[str, float | None]) -> str:
    """The values as TOML tables, ready to paste into a spec (None: left out)."""
    tables: dict[str, list[str]] = {}
    for path, value in params.items():
        if value is None:
            continue
        table, _, key = path.rpartition(".")
        text = str(value) if isinstance(value, int) else f"{value:.6g}"
        tables.setdefault(table, []).append(f"{key} = {text}")
    return "\n\n".join(f"[{t}]\n" + "\n".join(lines) for t, lines in tables.items()) + "\n"
