"""The one Optuna search of opar-sim, and the evaluations it scores.

``minimize`` asks, scores and tells: every search of the project (``tune``, the
shoot-out, the defaults' re-fit, the relay check) is this loop, with a journal on
disk that makes an interrupted search resume exactly.  An ``Evaluate`` runs a spec
with a trial's dotted-path parameters on a seed set and returns the episode rows,
without writing files: on an executor (``executor_evaluate``, the SimPy engine) or
in this process on the lockstep batch engine (``batch_evaluate``).

The protocols built on it (what a trial is scored on, the finalists, the held-out
comparison) are the studies': ``opar_sim.studies.tune``, ``opar_sim.studies.shootout``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import Any

import numpy as np

from opar_sim.measure.stats import bootstrap_mean
from opar_sim.running.chunks import Chunk, plan_chunks
from opar_sim.running.runner import run_in_order
from opar_sim.spec.edit import changed
from opar_sim.spec.schema import ParamRange

WARM_EPISODES = 20  # each law's batch run in a pool's parent (``warm_batch``)

# scores a list of parameter assignments on a seed set: one list of rows per assignment
Evaluate = Callable[[dict[str, float] | None, int, int], list[dict[str, Any]]]


def _sampler(kind: str, seed: int) -> Any:
    import optuna

    if kind == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    return optuna.samplers.TPESampler(seed=seed)


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


def evaluate_range(
    evaluate: Evaluate, params: dict[str, float] | None, start: int, stop: int, seed: int
) -> list[dict[str, Any]]:
    """Episodes ``start``..``stop - 1`` of ``seed`` (common random numbers with any run of it).

    ``executor_evaluate``'s evaluation takes ``start`` and runs only those episodes (a SimPy
    episode's randomness depends on its seed and number alone); any other ``Evaluate`` (the
    batch engine's streams are per block of episodes) runs episodes 0..stop - 1 and the
    first ``start`` are dropped.

    Args:
        evaluate: The evaluation.
        params: The assignment (None: the spec as it is).
        start: The first episode.
        stop: One past the last.
        seed: The spec seed.

    Returns:
        The episode rows of the range.
    """
    import inspect

    if start == 0:
        return evaluate(params, stop, seed)
    if "start" in inspect.signature(evaluate).parameters:
        ranged: Any = evaluate
        return list(ranged(params, stop - start, seed, start=start))
    return [r for r in evaluate(params, stop, seed) if int(r["episode"]) >= start]


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], seed: int, resamples: int = 4000
) -> tuple[float, float]:
    """95 % percentile interval of mean(a − b) over episodes resampled in pairs."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    estimate = bootstrap_mean(diff, np.random.default_rng(seed), resamples=resamples)
    return (estimate.low, estimate.high)


def importances(study: Any) -> dict[str, float]:
    """Optuna's parameter importances of a finished study (empty when it cannot say)."""
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

    def evaluate(
        params: dict[str, float] | None, episodes: int, seed: int, start: int = 0
    ) -> list[dict[str, Any]]:
        chunks = evaluation_chunks(base, parse, params, episodes, seed, parallelism, start)
        results = run_in_order(executor, chunks, 2 * parallelism + 1)
        if on_progress is None:
            return rows_of(r.episodes for r in results)
        texts = []
        for r in results:
            texts.append(r.episodes)
            on_progress(r.chunk.stop - r.chunk.start)
        return rows_of(iter(texts))

    return evaluate


def evaluation_chunks(
    base: dict[str, Any],
    parse: Callable[[dict[str, Any]], Any],
    params: dict[str, float] | None,
    episodes: int,
    seed: int,
    parallelism: int,
    start: int = 0,
) -> list[Chunk]:
    """The chunks ``executor_evaluate`` runs: episodes ``start``..``start + episodes − 1``.

    Args:
        base: The spec's data.
        parse: Turns spec data into a validated spec.
        params: The trial's dotted-path parameters (None: the spec as it is).
        episodes: Episodes to run.
        seed: The spec seed to run them on.
        parallelism: The executor's workers (it sizes the chunks).
        start: The first episode.

    Returns:
        Every controller's chunks in file order, without steps (``rows_of`` reads their rows).
    """
    spec = trial_spec(base, parse, params, start + episodes, seed)
    return [  # every controller's episodes start .. start + episodes − 1
        replace(c, start=max(c.start, start))
        for c in plan_chunks(spec, parallelism=parallelism, with_steps=False)
        if c.stop > start
    ]


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


def warm_batch(bases: Iterable[dict[str, Any]], episodes: int = WARM_EPISODES) -> None:
    """Run each spec with an array-twin law on the batch engine here, briefly, before a pool's.

    A row loop missing from Numba's cache is compiled here, once, where the command's
    notice (``engines.batch.compile_notice``) can say so, and cached: a pool's workers then
    load it (on a fresh clone each worker compiled every loop, 6-14 s, with the progress
    bar at 0).  With a warm cache this loads each loop once more, in this process (about
    0.4 s for a shoot-out's nine laws).  A law screened row by row (``ScalarRows``)
    compiles nothing of its own and is not run (``bayes`` would solve its model first: 4 s).

    Args:
        bases: The specs' data (each as the pool's jobs screen it).
        episodes: Episodes of each warming run.
    """
    from controllers.batch.twins import TWINS
    from opar_sim.engines.batch import run_batch
    from opar_sim.spec.build import build, parse_spec

    for base in bases:
        spec = parse_spec(base)
        if type(build(spec).controllers[0][1]()) in TWINS:
            run_batch(spec, 0, 0, episodes)
