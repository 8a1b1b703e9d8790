"""The Python API: run a spec, compare controllers, open a run directory.

Three functions, the same machinery as the command line (``opar-sim run`` and
``opar-sim compare``) with no second implementation: a spec is validated and
built by ``opar_sim.spec.build``, run by ``opar_sim.running.runner``
into an ordinary run directory, and measured by ``opar_sim.measure.run``.
They are also importable from the package root::

    import opar_sim

    run = opar_sim.run("experiments/flight_booking.toml", episodes=50, out="runs/api")
    run.summary["pid"]["success_rate"]
    again = opar_sim.load_run("runs/api")  # the same files, read back

A controller name may be a registered one (``pid``, ``threshold``, ...) or a
user's own class as ``path/to/file.py:ClassName``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.figures import write_figures
from opar_sim.figures.run import FIGURE_EPISODES, write_run_figures
from opar_sim.measure.run import RunAnalysis, analyze, write_metrics
from opar_sim.rundir import (
    SUMMARY_FILE,
    check_run_dir,
    default_run_dir,
    iter_episodes,
    iter_steps,
    prepare_out_dir,
    read_json,
    read_spec,
)
from opar_sim.running.executors import ExecutorConfig, open_executor
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import load_spec, parse_spec
from opar_sim.spec.edit import with_controllers, with_overrides
from opar_sim.spec.schema import ExperimentSpec, SpecError

SpecLike = ExperimentSpec | Mapping[str, Any] | str | os.PathLike[str]
"""A spec: a validated ``ExperimentSpec``, a mapping of spec keys, a TOML file, or TOML text."""

__all__ = ["Run", "SpecLike", "compare", "load_run", "run", "spec_of"]


@dataclass
class Run:
    """A run directory and what it holds.

    Attributes:
        path: The run directory.
        spec: The resolved spec it was made from (None if ``spec.json`` is missing).
        summary: ``summary.json``: per controller ``episodes``, ``success_rate``,
            ``success_ci95``, ``mean_steps``, ``mean_tokens``, ``mean_sim_seconds``,
            ``mean_replans`` and ``outcomes``.
    """

    path: Path
    spec: ExperimentSpec | None
    summary: dict[str, dict[str, Any]]
    _analysis: RunAnalysis | None = field(default=None, repr=False)

    @property
    def controllers(self) -> list[str]:
        """The controllers of the run, in run order."""
        return list(self.summary)

    def analysis(self, *, thrash_k: int = 2) -> RunAnalysis:
        """The full metrics of the run (``opar_sim.analysis.analyze``), computed once.

        Args:
            thrash_k: A REPLAN within this many steps of the previous one is thrash.

        Returns:
            Per-controller and per-episode metrics with their intervals.
        """
        if self._analysis is None or self._analysis.thrash_k != thrash_k:
            self._analysis = analyze(self.path, thrash_k=thrash_k)
        return self._analysis

    def episodes(self) -> Iterator[dict[str, Any]]:
        """The rows of ``episodes.jsonl``, in file order."""
        return iter_episodes(self.path)

    def steps(self) -> Iterator[dict[str, Any]]:
        """The rows of ``steps.jsonl``, in file order."""
        return iter_steps(self.path)

    def to_frame(self) -> Any:
        """One row per controller with every metric (needs pandas, the ``analysis`` extra)."""
        return self.analysis().to_frame()


def spec_of(spec: SpecLike) -> ExperimentSpec:
    """Validate and build a spec given in any of the accepted forms.

    Args:
        spec: An ``ExperimentSpec``; a mapping of spec keys (as in a TOML file);
            a path to a TOML file; or TOML text (a string with a newline).

    Returns:
        The validated spec, whose components are known to build.

    Raises:
        SpecError: naming the offending key, or the missing file.
    """
    if isinstance(spec, ExperimentSpec):
        return parse_spec(spec.model_dump(), f"spec {spec.name!r}")
    if isinstance(spec, Mapping):
        return parse_spec(dict(spec), "spec")
    if isinstance(spec, str) and "\n" in spec:
        try:
            data = tomllib.loads(spec)
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"spec text: not valid TOML: {exc}") from None
        return parse_spec(data, "spec text")
    return load_spec(Path(spec))


def run(
    spec: SpecLike,
    *,
    episodes: int | None = None,
    seed: int | None = None,
    controller: str | None = None,
    confirm: int | None = None,
    out: str | os.PathLike[str] | None = None,
    workers: int = 1,
    resume: bool = False,
    figures: bool = True,
) -> Run:
    """Run every episode of a spec into a run directory, as ``opar-sim run`` does.

    Args:
        spec: The spec (see ``spec_of`` for the accepted forms).
        episodes: Override the number of episodes.
        seed: Override the seed.
        controller: Run only this controller (a registered name or
            ``path/to/file.py:ClassName``), with its default parameters.
        confirm: The shared stop confirmation ``[guards] confirm``.
        out: The run directory (default ``runs/NAME/TIMESTAMP``); an existing run
            is never overwritten.
        workers: Worker processes (1: in this process).
        resume: Finish the interrupted run in ``out`` (needs ``out``).
        figures: Draw ``progress.png`` (and the learning curve with Reflexion).

    Returns:
        The finished run.

    Raises:
        SpecError: for a bad spec, an override it rejects, or an ``out`` that holds a run.
    """
    resolved = with_overrides(
        spec_of(spec), episodes=episodes, seed=seed, controller=controller, confirm=confirm
    )
    return _execute(resolved, out, workers=workers, resume=resume, figures=figures)


def compare(
    spec: SpecLike,
    controllers: Sequence[str] | None = None,
    *,
    episodes: int | None = None,
    seed: int | None = None,
    confirm: int | None = None,
    out: str | os.PathLike[str] | None = None,
    workers: int = 1,
    thrash_k: int = 2,
    figures: bool = True,
) -> Run:
    """Run several controllers on the same seeds and measure them, as ``opar-sim compare`` does.

    Writes the run directory, ``metrics.json`` and (with ``figures``) the figures
    under ``figures/``; the returned run's ``analysis()`` is already computed.

    Args:
        spec: The spec (see ``spec_of``).
        controllers: The controllers (names or ``file.py:ClassName``); default the
            spec's ``[[compare]]`` list.  One the spec configures keeps its parameters.
        episodes: Override the number of episodes per controller.
        seed: Override the seed.
        confirm: The shared stop confirmation ``[guards] confirm``.
        out: The run directory (default ``runs/NAME/TIMESTAMP``).
        workers: Worker processes (1: in this process).
        thrash_k: A REPLAN within this many steps of the previous one is thrash.
        figures: Draw the comparison figures (PNG and SVG).

    Returns:
        The finished run with its analysis.

    Raises:
        SpecError: for a bad spec or an empty controller list.
    """
    resolved = with_overrides(spec_of(spec), episodes=episodes, seed=seed, confirm=confirm)
    if controllers is not None:
        if not controllers:
            raise SpecError("compare: give at least one controller name")
        resolved = with_controllers(resolved, list(controllers))
    result = _execute(resolved, out, workers=workers, resume=False, figures=figures)
    analysis = result.analysis(thrash_k=thrash_k)
    write_metrics(analysis, result.path / "metrics.json")
    if figures:
        write_figures(analysis)
    return result


def load_run(path: str | os.PathLike[str]) -> Run:
    """Open an existing run directory (written by ``run``, ``compare`` or the CLI).

    Args:
        path: The run directory.

    Returns:
        The run: its spec, its summary, and its files and metrics on demand.

    Raises:
        RunDirError: when ``path`` is not a run directory.
    """
    where = check_run_dir(Path(path))
    summary_file = where / SUMMARY_FILE
    summary: dict[str, dict[str, Any]] = read_json(summary_file) if summary_file.is_file() else {}
    return Run(where, read_spec(where), summary)


def _execute(
    spec: ExperimentSpec,
    out: str | os.PathLike[str] | None,
    *,
    workers: int,
    resume: bool,
    figures: bool,
) -> Run:
    if resume and out is None:
        raise SpecError("resume needs out: the run directory to finish")
    where = Path(out) if out is not None else default_run_dir(spec.name)
    if not resume:
        prepare_out_dir(where)
    config = ExecutorConfig("serial", 1) if workers <= 1 else ExecutorConfig("process", workers)
    with open_executor(config) as executor:
        result = run_experiment(
            spec,
            where,
            executor=executor,
            parallelism=config.parallelism,
            resume=resume,
            keep_traces=FIGURE_EPISODES if figures else 0,
        )
    if figures:
        write_run_figures(spec, result.out, result.traces)
    return Run(result.out, spec, result.summary)


# --- the studies (opar_sim.studies), one protocol each: tune, shootout, refit, claims ---------

from opar_sim.studies.claim_recheck import RecheckResult, recheck  # noqa: E402
from opar_sim.studies.claims import ClaimsBudget, ClaimsResult, claims  # noqa: E402
from opar_sim.studies.recommend import TuneResult  # noqa: E402
from opar_sim.studies.refit import RefitBudget, RefitResult, refit  # noqa: E402
from opar_sim.studies.shootout import (  # noqa: E402
    ShootoutBudget,
    ShootoutResult,
    shootout,
)
from opar_sim.studies.tune import TuneBudget, tune  # noqa: E402

__all__ += [
    "ClaimsBudget",
    "ClaimsResult",
    "RefitBudget",
    "RefitResult",
    "ShootoutBudget",
    "ShootoutResult",
    "TuneBudget",
    "TuneResult",
    "claims",
    "refit",
    "shootout",
    "tune",
]
__all__ += ["RecheckResult", "recheck"]  # the claims' confirmatory re-check on fresh seeds


# --- the studies (opar_sim.studies), one protocol each: ablation, sprt, detectors, relay, memory
# A study is ``study(spec, budget, executor) -> Result``: the result's ``table()`` is what the
# command prints and ``to_dict()`` what it writes.  ``advise`` and ``calibrate`` read a run
# directory instead of a spec.

from opar_sim.calibration.calibrate import (  # noqa: E402
    CalibrationBudget,
    CalibrationReport,
    calibrate,
)
from opar_sim.studies.ablation import Ablation, AblationBudget, ablation  # noqa: E402
from opar_sim.studies.detectors import (  # noqa: E402
    DetectorsBudget,
    DetectorsResult,
    detectors,
)
from opar_sim.studies.memory import MemoryBudget, MemoryResult, learning, rebound  # noqa: E402
from opar_sim.studies.relay import RelayBudget, RelayStudy, relay  # noqa: E402
from opar_sim.studies.sprt import SPRTBudget, SPRTStudy, sprt_study  # noqa: E402
from opar_sim.traces.advise import Advice, advise  # noqa: E402

__all__ += [
    "Ablation",
    "AblationBudget",
    "Advice",
    "CalibrationBudget",
    "CalibrationReport",
    "DetectorsBudget",
    "DetectorsResult",
    "MemoryBudget",
    "MemoryResult",
    "RelayBudget",
    "RelayStudy",
    "SPRTBudget",
    "SPRTStudy",
    "ablation",
    "advise",
    "calibrate",
    "detectors",
    "learning",
    "rebound",
    "relay",
    "sprt_study",
]
