"""Black-box gain tuning with Optuna, scored honestly on held-out seeds.

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
same training seed; the best confirmed trial is returned, and the held-out
scoring runs on ``confirm`` too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from opar_sim.measure.stats import bootstrap_mean
from opar_sim.running.chunks import plan_chunks
from opar_sim.running.runner import run_in_order
from opar_sim.spec.edit import changed
from opar_sim.spec.schema import Objective, ParamRange, TuneSpec


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
class Finalist:
    """A screened trial re-scored on the confirming engine, the same training seed."""

    number: int
    params: dict[str, float]
    screen_score: float  # on the screening engine (the trial's own score)
    score: float  # on the confirming engine
    success_rate: float  # on the confirming engine


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


# scores a list of parameter assignments on a seed set: one list of rows per assignment
Evaluate = Callable[[dict[str, float] | None, int, int], list[dict[str, Any]]]


def _sampler(kind: str, seed: int) -> Any:
    import optuna

    if kind == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    return optuna.samplers.TPESampler(seed=seed)


JOURNAL_FILE = "optuna.journal"  # Optuna's journal of a tuning: optuna-dashboard opens it


def journal_storage(path: Path, *, resume: bool) -> Any:
    """Optuna's ``JournalStorage`` on ``path``; resuming, a torn tail and a stale lock go first.

    Args:
        path: The journal file (``OUT/optuna.journal``).
        resume: The tuning was interrupted: cut a half-written last line of the
            journal and remove the lock a killed process left behind.

    Returns:
        The storage.
    """
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    if resume:
        lock = Path(f"{path}.lock")
        if lock.is_symlink() or lock.exists():
            lock.unlink()
        if path.is_file():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                os.truncate(path, data.rfind(b"\n") + 1)
    return JournalStorage(JournalFileBackend(str(path)))


def _rngs(sampler: Any) -> dict[str, Any]:
    """The sampler's random states by attribute path (TPE, CMA-ES and their random samplers)."""
    found: dict[str, Any] = {}
    for name in ("_rng", "_cma_rng"):
        if hasattr(sampler, name):
            found[name] = getattr(sampler, name).rng
    for name in ("_random_sampler", "_independent_sampler"):
        inner = getattr(sampler, name, None)
        if inner is not None and hasattr(inner, "_rng"):
            found[f"{name}._rng"] = inner._rng.rng
    return found


def _rng_state(sampler: Any) -> dict[str, Any]:
    out = {}
    for path, rng in _rngs(sampler).items():
        kind, keys, pos, has_gauss, gauss = rng.get_state()
        out[path] = [kind, [int(k) for k in keys], int(pos), int(has_gauss), float(gauss)]
    return out


def _set_rng_state(sampler: Any, state: Mapping[str, Any]) -> None:
    for path, rng in _rngs(sampler).items():
        if path in state:
            kind, keys, pos, has_gauss, gauss = state[path]
            rng.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, gauss))


def minimize(
    space: Mapping[str, ParamRange],
    objective: Callable[[dict[str, float]], float | tuple[float, dict[str, Any]]],
    trials: int,
    seed: int,
    *,
    sampler: str = "tpe",
    enqueue: Sequence[Mapping[str, float]] = (),
    on_trial: Callable[[int, dict[str, float], float], None] | None = None,
    storage: Any = None,
    study_name: str = "opar-sim",
    resume: bool = False,
) -> tuple[Any, list[tuple[dict[str, float], float]]]:
    """The one Optuna search of opar-sim: ask, score, tell, ``trials`` times.

    With a ``storage`` (a journal) every trial is kept on disk with the
    sampler's random state after it, so ``resume`` continues an interrupted
    search exactly where it stopped: the same assignments, the same scores.

    Args:
        space: Parameter name -> its search range.
        objective: Scores one assignment (lower is better); it may return
            ``(score, user attributes)`` to keep more with the trial.
        trials: How many assignments to score, the enqueued ones included.
        seed: The sampler's seed.
        sampler: ``tpe`` or ``cmaes``.
        enqueue: Assignments to score first (e.g. classic tuning rules).
        on_trial: Called with each trial's number, assignment and score.
        storage: An Optuna storage (``journal_storage``), or None for memory.
        study_name: The study's name in ``storage``.
        resume: Load the study from ``storage`` and finish it.

    Returns:
        The Optuna study and every (assignment, score) in trial order.
    """
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    chosen = _sampler(sampler, seed)
    study = optuna.create_study(
        direction="minimize",
        sampler=chosen,
        storage=storage,
        study_name=study_name if storage is not None else None,
        load_if_exists=resume,
    )
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    for stale in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        study._storage.set_trial_state_values(stale._trial_id, TrialState.FAIL)  # killed
    if done:
        _set_rng_state(chosen, done[-1].user_attrs.get("sampler_rng", {}))
    elif not study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        for assignment in enqueue:
            study.enqueue_trial(dict(assignment))
    scored: list[tuple[dict[str, float], float]] = [
        (dict(t.params), float(t.value or 0.0)) for t in done
    ]
    for _ in range(trials - len(done)):
        trial = study.ask()
        params: dict[str, float] = {
            path: (
                trial.suggest_int(path, math.ceil(r.low), math.floor(r.high), log=r.log)
                if r.integer
                else trial.suggest_float(path, r.low, r.high, log=r.log)
            )
            for path, r in space.items()
        }
        if storage is not None:
            trial.set_user_attr("sampler_rng", _rng_state(chosen))
        value = objective(params)
        score, attrs = value if isinstance(value, tuple) else (value, {})
        for key, attr in attrs.items():
            trial.set_user_attr(key, attr)
        study.tell(trial, score)
        scored.append((params, score))
        if on_trial is not None:
            on_trial(len(scored) - 1, params, score)
    return study, scored


def tune(
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
        importances=_importances(study) if len(spec.space) > 1 else {},
        finalists=confirmed,
    )


def confirm_finalists(
    objective: Objective,
    train_episodes: int,
    trials: Sequence[Trial],
    confirm: Evaluate,
    seed: int,
    count: int,
) -> list[Finalist]:
    """Re-score the ``count`` best distinct screened trials with ``confirm``, training seed.

    Args:
        objective: The per-episode objective.
        train_episodes: Episodes of each re-score (the screening's training episodes).
        trials: The screened trials.
        confirm: The evaluation of reference.
        seed: The training seed.
        count: How many finalists (at least 1).

    Returns:
        The finalists in screening order (best screened first).
    """
    ranked = sorted(trials, key=lambda t: (t.score, t.number))
    chosen: list[Trial] = []
    for trial in ranked:  # a repeated assignment (an enqueued one sampled again) counts once
        if all(trial.params != c.params for c in chosen):
            chosen.append(trial)
        if len(chosen) == max(1, count):
            break
    out = []
    for trial in chosen:
        rows = confirm(trial.params, train_episodes, seed)
        score = mean_score(objective, rows)
        out.append(Finalist(trial.number, trial.params, trial.score, score, success_rate(rows)))
    return out


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
        spec = trial_spec(base, parse, params, episodes, seed)
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


def trial_spec(
    base: dict[str, Any],
    parse: Callable[[dict[str, Any]], Any],
    params: dict[str, float] | None,
    episodes: int,
    seed: int,
) -> Any:
    """The spec one trial runs: ``base`` with the trial's parameters, size and seed, no tuning.

    Args:
        base: The spec's data.
        parse: Turns spec data into a validated spec.
        params: The trial's dotted-path parameters (None: the spec as it is).
        episodes: Episodes to run.
        seed: The spec seed to run them on.

    Returns:
        The validated spec.
    """
    data = apply_params(base, params or {})
    data["episodes"] = episodes
    data["seed"] = seed
    data.pop("tune", None)
    return parse(data)


def batch_evaluate(
    base: dict[str, Any],
    parse: Callable[[dict[str, Any]], Any],
    on_progress: Callable[[int], None] | None = None,
) -> Evaluate:
    """An ``Evaluate`` on the lockstep batch engine, in this process, without files.

    Its rows are the ``episodes.jsonl`` rows the batch engine writes; its
    random streams are its own (``opar_sim.engines.batch``), so its scores
    of one seed are not the SimPy engine's.

    Args:
        base: The spec's data (no ``tune`` table).
        parse: Turns spec data into a validated spec.
        on_progress: Called with the episodes each controller adds.

    Returns:
        The evaluation.
    """
    import json

    from opar_sim.engines.batch import check_batch, episode_text, run_batch

    def evaluate(params: dict[str, float] | None, episodes: int, seed: int) -> list[dict[str, Any]]:
        spec = trial_spec(base, parse, params, episodes, seed)
        check_batch(spec)
        rows = []
        for k in range(len(spec.controller_list())):
            text = episode_text(spec, k, 0, run_batch(spec, k, 0, episodes))
            rows += [json.loads(line) for line in text.splitlines()]
            if on_progress is not None:
                on_progress(episodes)
        return rows

    return evaluate
