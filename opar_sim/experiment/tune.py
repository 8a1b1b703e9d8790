"""Black-box gain tuning with Optuna, scored honestly on held-out seeds.

Every trial runs the same training seed set (common random numbers, so trials
are compared on paired samples).  The best gains found are then re-scored on
a held-out seed set beside the spec's own gains, because best-of-N on the
training seeds is biased upward; the difference comes with a paired
bootstrap interval.

The objective, minimised, is per episode
``failure·(1 − success) + tokens·n_tokens + replan_rate·replans/steps``,
averaged over episodes, with the weights given in the spec.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.analysis.stats import bootstrap_mean
from opar_sim.experiment.chunks import plan_chunks
from opar_sim.experiment.edit import changed
from opar_sim.experiment.runner import run_in_order
from opar_sim.experiment.spec import Objective, ParamRange, TuneSpec


@dataclass
class Trial:
    """One scored assignment: its number, parameters, training score and success rate."""

    number: int
    params: dict[str, float]
    score: float
    success_rate: float


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
    """The outcome of ``tune``: the best gains, every trial and the held-out comparison."""

    best_params: dict[str, float]
    best_train_score: float
    holdout: Holdout
    trials: list[Trial] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)


# scores a list of parameter assignments on a seed set: one list of rows per assignment
Evaluate = Callable[[dict[str, float] | None, int, int], list[dict[str, Any]]]


def _sampler(kind: str, seed: int) -> Any:
    import optuna

    if kind == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    return optuna.samplers.TPESampler(seed=seed)


def minimize(
    space: Mapping[str, ParamRange],
    objective: Callable[[dict[str, float]], float],
    trials: int,
    seed: int,
    *,
    sampler: str = "tpe",
    enqueue: Sequence[Mapping[str, float]] = (),
    on_trial: Callable[[int, dict[str, float], float], None] | None = None,
) -> tuple[Any, list[tuple[dict[str, float], float]]]:
    """The one Optuna search of opar-sim: ask, score, tell, ``trials`` times.

    Args:
        space: Parameter name -> its search range.
        objective: Scores one assignment (lower is better).
        trials: How many assignments to score, the enqueued ones included.
        seed: The sampler's seed.
        sampler: ``tpe`` or ``cmaes``.
        enqueue: Assignments to score first (e.g. classic tuning rules).
        on_trial: Called with each trial's number, assignment and score.

    Returns:
        The Optuna study and every (assignment, score) in trial order.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=_sampler(sampler, seed))
    for assignment in enqueue:
        study.enqueue_trial(dict(assignment))
    scored: list[tuple[dict[str, float], float]] = []
    for _ in range(trials):
        trial = study.ask()
        params: dict[str, float] = {
            path: (
                trial.suggest_int(path, math.ceil(r.low), math.floor(r.high), log=r.log)
                if r.integer
                else trial.suggest_float(path, r.low, r.high, log=r.log)
            )
            for path, r in space.items()
        }
        score = objective(params)
        study.tell(trial, score)
        scored.append((params, score))
        if on_trial is not None:
            on_trial(trial.number, params, score)
    return study, scored


def tune(
    spec: TuneSpec,
    evaluate: Evaluate,
    seed: int,
    on_trial: Callable[[Trial], None] | None = None,
) -> TuneResult:
    """Search the space with Optuna on the training seeds, then score on held-out seeds.

    Args:
        spec: The ``[tune]`` table: space, objective, trials, seeds.
        evaluate: ``evaluate(params, episodes, seed)`` runs the spec with ``params``
            applied (None: the spec's own values) and returns the episode rows.
        seed: The training seed (and the sampler's).
        on_trial: Called with each finished trial.

    Returns:
        The best parameters, their training score and the held-out comparison.
    """
    trials: list[Trial] = []

    def objective(params: dict[str, float]) -> float:
        rows = evaluate(params, spec.train_episodes, seed)
        score = mean_score(spec.objective, rows)
        record = Trial(len(trials), params, score, success_rate(rows))
        trials.append(record)
        if on_trial is not None:
            on_trial(record)
        return score

    study, _ = minimize(spec.space, objective, spec.trials, seed, sampler=spec.sampler)
    best = min(trials, key=lambda t: (t.score, t.number))
    default_rows = evaluate(None, spec.holdout_episodes, spec.holdout_seed)
    best_rows = evaluate(best.params, spec.holdout_episodes, spec.holdout_seed)
    return TuneResult(
        best_params=best.params,
        best_train_score=best.score,
        holdout=compare_holdout(spec.objective, default_rows, best_rows, seed),
        trials=trials,
        importances=_importances(study) if len(spec.space) > 1 else {},
    )


def mean_score(objective: Objective, rows: Sequence[Mapping[str, Any]]) -> float:
    """The objective averaged over episode rows."""
    return float(np.mean([objective.episode_score(r) for r in rows]))


def success_rate(rows: Sequence[Mapping[str, Any]]) -> float:
    """The share of episode rows that succeeded."""
    return float(np.mean([bool(r["success"]) for r in rows]))


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], seed: int, resamples: int = 4000
) -> tuple[float, float]:
    """95 % percentile interval of mean(a − b) over episodes resampled in pairs."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    estimate = bootstrap_mean(diff, np.random.default_rng(seed), resamples=resamples)
    return (estimate.low, estimate.high)


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


def _importances(study: Any) -> dict[str, float]:
    import warnings

    import optuna

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "importances will be equal" on tiny studies
            found = optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError):
        return {}
    return {k: float(v) for k, v in found.items() if math.isfinite(v)}


def apply_params(data: dict[str, Any], params: Mapping[str, float]) -> dict[str, Any]:
    """A copy of spec data with the tuned values set at their paths (``edit.changed``)."""
    return changed(data, params)


def toml_snippet(params: Mapping[str, float]) -> str:
    """The best values as TOML tables, ready to paste into a spec."""
    tables: dict[str, list[str]] = {}
    for path, value in params.items():
        table, _, key = path.rpartition(".")
        text = str(value) if isinstance(value, int) else f"{value:.6g}"
        tables.setdefault(table, []).append(f"{key} = {text}")
    return "\n\n".join(f"[{t}]\n" + "\n".join(lines) for t, lines in tables.items()) + "\n"


def rows_of(chunks_results: Iterator[str]) -> list[dict[str, Any]]:
    """Episode rows from the episode-lines text of chunk results."""
    import json

    return [json.loads(line) for text in chunks_results for line in text.splitlines()]


def executor_evaluate(
    base: dict[str, Any],
    executor: Executor,
    parallelism: int,
    parse: Callable[[dict[str, Any]], Any],
    on_progress: Callable[[int], None] | None = None,
) -> Evaluate:
    """An ``Evaluate`` that runs episodes on ``executor`` without writing files.

    ``on_progress`` is called with the episodes each finished chunk adds.
    """

    def evaluate(params: dict[str, float] | None, episodes: int, seed: int) -> list[dict[str, Any]]:
        data = apply_params(base, params or {})
        data["episodes"] = episodes
        data["seed"] = seed
        data.pop("tune", None)
        spec = parse(data)
        chunks = plan_chunks(spec, parallelism=parallelism, with_steps=False)
        results = run_in_order(executor, chunks, 2 * parallelism + 1)
        if on_progress is None:
            return rows_of(r.episodes for r in results)
        texts = []
        for r in results:
            texts.append(r.episodes)
            on_progress(r.chunk.stop - r.chunk.start)
        return rows_of(iter(texts))

    return evaluate
