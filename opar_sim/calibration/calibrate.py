"""Fitting the simulated agent to a record and checking the fit on held-out tasks.

Two kinds of record go through ``calibrate``:

- a run recorded by opar-sim (an ``--agent llm`` run, or a simulated one): its steps
  give the agent's knobs directly (``calibration.direct.fit``; bias and noise refined by
  simulated moments unless ``direct``), checked in sample against the record's success
  rate and mean steps;
- any record of runs per task, e.g. one imported with ``opar-sim traces import``: only
  outcomes, tool calls and task features, fitted on a model spec (``model``, by default
  ``experiments/tau_airline_model.toml``).

Both then fit the task heterogeneity (``calibration.heterogeneity``: a per-task random
effect on plan quality, its mean by a task feature; with ``task_length``, or a model
whose task has ``extra_reads_mean`` > 0, also a latent task length) by simulated maximum
likelihood, and check it by cross-validation over task folds.  The ``CalibrationReport``
holds the ``[agent]`` snippet (``calibrated.toml``), the JSON (``calibration.json``), the
held-out checks' ``table()`` and the verdict.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opar_sim.calibration.direct import (
    Calibration,
    CheckResult,
    check,
    fit,
    refine,
    simulated_spec,
)
from opar_sim.calibration.heterogeneity import (
    LENGTH_GRID,
    Record,
    Validation,
    build_table,
    load_record,
    table_cells,
)
from opar_sim.calibration.heterogeneity import validate as validate_record
from opar_sim.measure.table import TextTable
from opar_sim.rundir import check_run_files
from opar_sim.running.stages import Note, Stage, no_note, no_stage
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec, SpecError
from opar_sim.traces.recorded import RecordedRun, load_run

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "experiments" / "tau_airline_model.toml"


@dataclass(frozen=True)
class CalibrationBudget:
    """What a calibration may spend: the folds, the simulated table, the in-sample check."""

    folds: int = 5  # task folds held out
    cell_episodes: int = 48  # simulated episodes per (feature, shift) cell of the table
    episodes: int = 1000  # simulated episodes of the in-sample check (an opar-sim record)


@dataclass
class CalibrationReport:
    """The fitted agent, and how it did on the held-out tasks."""

    path: Path  # the record
    snippet: str  # ``calibrated.toml``: the ``[agent]`` section (and the model's task)
    report: dict[str, Any]  # ``calibration.json``
    validation: Validation

    def to_dict(self) -> dict[str, Any]:
        """``calibration.json``: the in-sample check, the parameters, the validation."""
        return self.report

    def table(self) -> TextTable:
        """The held-out checks: per fold, pooled and in sample."""
        return validation_table(self.validation)

    def verdict(self) -> str:
        """One line: whether every held-out check passed."""
        failed = self.validation.failures()
        if not failed:
            return "fits: every held-out check passed (pooled, and every fold under Holm)"
        return "does NOT fit on held-out tasks: " + ", ".join(failed) + " failed"


def calibrate(
    rundir: str | os.PathLike[str],
    budget: CalibrationBudget = CalibrationBudget(),
    *,
    model: ExperimentSpec | str | Path | None = None,
    vary: Sequence[str] = (),
    shape: str | None = None,
    task_length: bool | None = None,
    length_slope: bool = False,
    homogeneous: bool = False,
    seed: int = 0,
    direct: bool = False,
    note: Note = no_note,
    stage: Stage = no_stage,
) -> CalibrationReport:
    """Fit a record (an opar-sim run or an imported one) and check the fit on held-out tasks.

    Args:
        rundir: The record's run directory.
        budget: Folds, episodes per table cell, episodes of the in-sample check.
        model: The model spec (a simulated agent) to fit; default: for an opar-sim record
            its own spec with the calibrated agent, else ``DEFAULT_MODEL``.
        vary: ``PATH=V1,V2,...`` settings of the model to try too (every combination);
            each fit keeps the likeliest, chosen on its training tasks only.
        shape: A task feature whose recorded value the model's task is stretched to.
        task_length: Fit a latent task length (None: when the model's task has
            ``extra_reads_mean`` > 0).
        length_slope: Also fit the latent length's dependence on the feature (also on
            when the model's ``extra_reads_slope`` is not 0).
        homogeneous: Fit without task heterogeneity (one shift for every task).
        seed: The seed of the checks and the simulated tables.
        direct: Keep the direct estimates of bias and noise of an opar-sim record.
        note: Called with the in-sample check's two lines (an opar-sim record).
        stage: Shows the table's simulation (in episodes) and the fit (no total).

    Returns:
        The report.

    Raises:
        SpecError: for a directory that is not a run, or a model that cannot reproduce
            the record's features.
    """
    path = Path(rundir)
    if not (path / "episodes.jsonl").is_file():
        raise SpecError(f"{path}: not a run directory (no episodes.jsonl)")
    check_run_files(path)  # an emptied or doubled file, named before anything is fitted
    recorded = _step_record(path)
    report: dict[str, Any] = {}
    calibration: Calibration | None = None
    if recorded is not None:
        calibration = fit(recorded)
        if not direct:
            calibration = refine(recorded, calibration)
        result = check(recorded, calibration, budget.episodes, seed)
        report["check"] = result.to_dict() | {"in_sample": True}
        for line in _check_lines(len(recorded.episodes), result):
            note(line)
    spec = _model(model, recorded, calibration)
    feature = str(spec.agent.params.get("task_feature", "write_actions"))
    record = load_record(path, feature, shape)
    lengths = _lengths(task_length, spec)
    if lengths is None and spec.task.params.get("extra_reads_mean"):  # --no-task-length
        spec = apply_changes(spec, {"task.params.extra_reads_mean": 0.0}, "--no-task-length")
    variants = _variants(spec, vary)
    slope = bool(length_slope or _model_slope(variants[0][1]))
    validation = _validate(record, variants, budget, seed, homogeneous, slope, lengths, stage)
    spec = dict(variants)[validation.fitted.structure]
    task_params = validation.effect.task_params()
    if task_params:  # the fitted latent length is the task's: the model's task carries it
        changes = {f"task.params.{k}": v for k, v in task_params.items()}
        spec = apply_changes(spec, changes, "calibrate")
    agent_params = dict(spec.agent.params) | validation.effect.params()
    evidence = dict(calibration.evidence) if calibration is not None else {}
    evidence["task_effect_mean"] = (
        f"simulated maximum likelihood over {len(record.tasks)} tasks, {record.runs} runs"
    )
    snippet = Calibration(agent_params, evidence).to_toml(str(path))
    if recorded is None:  # the task is the model's, not the record's: say which
        snippet += _task_toml(spec)
    report |= {
        "params": agent_params,
        "evidence": evidence,
        "model": spec.name,
        "model_task": spec.task.model_dump(),
        "validation": validation.to_dict(),
    }
    return CalibrationReport(path, snippet, report, validation)


def _check_lines(episodes: int, r: CheckResult) -> list[str]:
    """The in-sample check of an opar-sim record: the record, then the calibrated simulation."""
    lo, hi = r.recorded_success_ci
    slo, shi = r.recorded_steps_ci
    return [
        f"recorded ({episodes} episodes): success {r.recorded_success:.1%} "
        f"[{lo:.1%}, {hi:.1%}], mean steps {r.recorded_steps:.2f} [{slo:.2f}, {shi:.2f}]",
        f"calibrated simulation, in sample (not a validation; {r.episodes} episodes): "
        f"success {r.simulated_success:.1%} "
        f"({'within' if r.success_within else 'OUTSIDE'}), mean steps "
        f"{r.simulated_steps:.2f} ({'within' if r.steps_within else 'OUTSIDE'})",
    ]


def _step_record(path: Path) -> RecordedRun | None:
    """The run as an opar-sim record with the agent's steps, or None (an imported record)."""
    if not (path / "spec.json").is_file():
        if (path / "source.json").is_file():
            return None  # an imported record: no spec, no simulated agent's steps to fit
        raise SpecError(
            f"{path}: no spec.json (an opar-sim run needs it; an imported one has source.json)"
        )
    run = load_run(path, need_steps=True)  # damaged or missing files: a one-line error
    if "expert" not in run.steps[0]:
        return None
    return run


def _model(
    model: ExperimentSpec | str | Path | None,
    run: RecordedRun | None,
    cal: Calibration | None,
) -> ExperimentSpec:
    if isinstance(model, ExperimentSpec):
        return model
    if model is not None:
        return load_spec(model)
    if run is not None and cal is not None:
        spec: ExperimentSpec = simulated_spec(run.spec, cal)
        return spec
    if not DEFAULT_MODEL.is_file():
        raise SpecError("calibrate: this record has no simulated spec of its own; give --model")
    return load_spec(DEFAULT_MODEL)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _variants(model: ExperimentSpec, vary: Sequence[str]) -> list[tuple[str, ExperimentSpec]]:
    """The model and its variants (every combination of the ``--vary`` values), labelled."""
    variants: list[tuple[str, ExperimentSpec]] = [("model", model)]
    for item in vary:
        key, sep, values = item.partition("=")
        if not sep or not key or not values:
            raise SpecError(f"--vary {item!r}: expected PATH=V1,V2,...")
        grown = []
        for label, spec in variants:
            for text in values.split(","):
                value = _value(text.strip())
                name = f"{key}={text.strip()}" if label == "model" else f"{label}, {key}={text}"
                grown.append((name, apply_changes(spec, {key: value}, "--vary")))
        variants = grown
    return variants


def _lengths(on: bool | None, model: ExperimentSpec) -> tuple[int, ...] | None:
    """The table's latent lengths: ``LENGTH_GRID`` if the task length is fitted, else None."""
    if on is None:
        on = float(model.task.params.get("extra_reads_mean", 0.0) or 0.0) > 0
    if on and model.task.name != "tool_chain":
        raise SpecError(
            f"--task-length: the model's task {model.task.name!r} has no latent length "
            "(tool_chain has: extra_reads_*)"
        )
    return LENGTH_GRID if on else None


def _validate(
    record: Record,
    variants: list[tuple[str, ExperimentSpec]],
    budget: CalibrationBudget,
    seed: int,
    homogeneous: bool,
    slope: bool,
    lengths: tuple[int, ...] | None,
    stage: Stage,
) -> Validation:
    """Simulate each variant's table, then fit and cross-validate over task folds."""
    features, cells = table_cells(record, budget.cell_episodes, lengths)
    tables = []
    with stage("simulating the model's table", cells * len(variants)) as advance:
        for label, spec in variants:
            table = build_table(
                spec,
                features,
                record.feature,
                budget.cell_episodes,
                seed,
                advance=advance,
                shape=record.shape,
                lengths=lengths,
            )
            tables.append((label, table))
    with stage("fitting and cross-validating", None):
        return validate_record(record, tables, budget.folds, seed, homogeneous, length_slope=slope)


def _model_slope(model: ExperimentSpec) -> float:
    """The model's dependence of the latent length on the feature (0: none)."""
    return float(model.task.params.get("extra_reads_slope", 0.0) or 0.0)


def _toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def _task_toml(model: ExperimentSpec) -> str:
    """The model's task section (the fitted structure's), to go with the ``[agent]`` one."""
    lines = [
        "",
        f"# the model's task ({model.name})",
        "[task]",
        f"name = {json.dumps(model.task.name)}",
    ]
    if model.task.params:
        lines += ["", "[task.params]"]
        lines += [f"{k} = {_toml_value(v)}" for k, v in model.task.params.items()]
    return "\n".join(lines) + "\n"


def validation_table(validation: Validation) -> TextTable:
    """The held-out check of ``calibrate``: per fold, pooled, and in sample (never a pass).

    Each cell reads "model vs record [record's task-bootstrap 95 % interval]".
    """
    checks = [*validation.folds, validation.pooled, validation.in_sample]
    ks = len(validation.pooled.predicted.pass_k)
    columns = ["tasks held out", "tasks", "runs"]
    columns += [f"pass^{k}" for k in range(1, ks + 1)]
    columns += ["tool calls, successes", "tool calls, failures", "KS p"]
    columns += [f"tasks by successes 0..{ks}", "spread p", "verdict"]
    rows = []
    for c in checks:
        row = [c.label, str(c.tasks), str(c.runs)]
        for k in range(ks):
            row.append(
                _vs(
                    c.predicted.pass_k[k],
                    c.recorded.pass_k[k],
                    c.low.pass_k[k],
                    c.high.pass_k[k],
                    ".2f",
                )
            )
        row.append(
            _vs(
                c.predicted.success_calls,
                c.recorded.success_calls,
                c.low.success_calls,
                c.high.success_calls,
                ".1f",
            )
        )
        row.append(
            _vs(
                c.predicted.failure_calls,
                c.recorded.failure_calls,
                c.low.failure_calls,
                c.high.failure_calls,
                ".1f",
            )
        )
        row.append(f"{c.ks_pvalue:.3f}")
        model = " ".join(f"{v:.1f}" for v in c.spread_expected)
        record = " ".join(f"{v:.0f}" for v in c.spread_recorded)
        row.append(f"{model} vs {record}")
        row.append(f"{c.spread_pvalue:.3f}")
        if not c.held_out:
            row.append("not a validation")
        elif c in validation.folds:  # a fold: its tests after Holm over every fold's tests
            failed = c.rejected()
            low = min(c.adjusted.values()) if c.adjusted else math.nan
            row.append(f"ok (Holm p ≥ {low:.2f})" if not failed else "FAILS " + ", ".join(failed))
        else:
            failed = c.failures()
            row.append("ok" if not failed else "FAILS " + ", ".join(failed))
        rows.append(row)
    e = validation.effect
    notes = [
        "cells: model vs record, then the record's 95 % interval (bootstrap over tasks); "
        "KS: two-sample Kolmogorov-Smirnov test of tool calls per run",
        "each fold is predicted by the model fitted on the other folds; the verdict: the "
        "pooled held-out row (every task predicted once by a fit that never saw it) passes "
        "every check at 5 %, and no fold test (pass^k, both lengths, KS, spread: parametric "
        "p-values from simulated records) is rejected by Holm over all folds' tests at 5 %",
        "spread: tasks by successes out of their first runs, model (expected) vs record; "
        "the spread test: the variance over tasks of their successes, p from simulated records",
        f"fit on all tasks: task_effect_mean {e.mean:.3f}, task_effect_slope {e.slope:.3f}, "
        f"task_effect_sd {e.sd:.3f}"
        + (" (homogeneous: slope and sd fixed at 0)" if validation.homogeneous else "")
        + (f"; structure {validation.fitted.structure}" if len(validation.structures) > 1 else "")
        + "".join(f", {k} {v:.3f}" for k, v in e.task_params().items()),
    ]
    # on a narrow terminal: the counts and the histogram go, then every cell wraps at "vs"
    priority = (0, 2, 2, *(0 for _ in range(ks)), 0, 0, 0, 3, 0, 0)
    return TextTable(
        "calibration checked on held-out tasks", columns, rows, notes, left=1, priority=priority
    )


def _num(value: float, fmt: str = ".1f") -> str:
    return "–" if value is None or math.isnan(value) else format(value, fmt)


def _vs(model: float, record: float, low: float, high: float, fmt: str) -> str:
    if math.isnan(record):
        return f"{_num(model, fmt)} vs –"
    return f"{_num(model, fmt)} vs {_num(record, fmt)} [{_num(low, fmt)}, {_num(high, fmt)}]"
