"""``opar-sim calibrate RUNDIR``: fit the simulated agent to a record, checked on held-out tasks.

Two kinds of record go through it:

- a run recorded by opar-sim (an ``--agent llm`` run, or a simulated one): its
  steps give the agent's knobs directly (``analysis.calibration.fit``; bias and
  noise refined by simulated moments unless ``--direct``), checked in sample
  against the record's success rate and mean steps;
- any record of runs per task, e.g. one imported with ``opar-sim traces
  import``: only outcomes, tool calls and task features, fitted on a model spec
  (``--model``, by default ``experiments/tau_airline_model.toml``).

Both then fit the task heterogeneity (``analysis.heterogeneity``: a per-task
random effect on plan quality, its mean by a task feature; with ``--task-length``,
or a model whose task has ``extra_reads_mean`` > 0, also a latent task length) by
simulated maximum likelihood, and check it by cross-validation over task folds; "fits"
is printed only when the held-out checks pass.  Writes
``RUNDIR/calibrated.toml`` (an ``[agent]`` section to paste into a spec) and
``RUNDIR/calibration.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from opar_sim.calibration.direct import Calibration, check, fit, refine, simulated_spec
from opar_sim.calibration.heterogeneity import (
    LENGTH_GRID,
    Validation,
    build_table,
    load_record,
    table_cells,
)
from opar_sim.calibration.heterogeneity import validate as validate_record
from opar_sim.cli.commands.common import int_at_least
from opar_sim.cli.render import progress_bar
from opar_sim.cli.tables import validation_table
from opar_sim.rundir import write_bytes, write_json
from opar_sim.spec.build import load_spec
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec, SpecError
from opar_sim.traces.recorded import RecordedRun, load_run

NAME = "calibrate"
HELP = "fit the simulated agent to a record (LLM run or imported) and check it on held-out tasks"

DEFAULT_MODEL = Path(__file__).resolve().parents[3] / "experiments" / "tau_airline_model.toml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run directory to fit, the model, the folds and the simulation sizes.

    ``--direct`` keeps the direct estimates of bias and noise of an opar-sim
    record instead of refining them by simulated moments.
    """
    parser.add_argument("rundir", help="a run directory (an --agent llm run, or imported)")
    parser.add_argument(
        "--model",
        help="the model spec (simulated agent) to fit; default: for an opar-sim record its own "
        "spec with the calibrated agent, else experiments/tau_airline_model.toml",
    )
    parser.add_argument(
        "--folds", type=int_at_least(2), default=5, help="task folds held out (default 5)"
    )
    parser.add_argument(
        "--cell-episodes",
        type=int_at_least(4),
        default=48,
        help="simulated episodes per (feature, shift) cell of the table (default 48)",
    )
    parser.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="PATH=V1,V2,...",
        help="also try these values of a model setting (e.g. "
        "task.params.wrong_write_share=0.3,0.5,0.7); each fit keeps the likeliest, "
        "chosen on its training tasks only (repeatable: every combination)",
    )
    parser.add_argument(
        "--shape",
        metavar="FEATURE",
        help="also match each task's length: the model's task is stretched to the recorded "
        "task's value of this feature (tool_chain: actions, the ground-truth action count); "
        "the table then has a cell per (write count, length) of the record",
    )
    parser.add_argument(
        "--task-length",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fit a latent task length: each world needs r more lookups, r per world from a "
        "negative binomial whose mean and size are fitted (tool_chain's extra_reads_*); "
        "default: on when the model's task has extra_reads_mean > 0",
    )
    parser.add_argument(
        "--length-slope",
        action="store_true",
        help="with the task length, also fit its mean's dependence on the feature, "
        "m * exp(c * x) (tool_chain's extra_reads_slope; default: on when the model's is not 0)",
    )
    parser.add_argument(
        "--homogeneous",
        action="store_true",
        help="fit a model without task heterogeneity (one shift for every task)",
    )
    parser.add_argument(
        "--episodes",
        type=int_at_least(1),
        default=1000,
        help="simulated episodes for the in-sample check of an opar-sim record (default 1000)",
    )
    parser.add_argument("--seed", type=int_at_least(0), default=0, help="seed of the checks")
    parser.add_argument(
        "--direct",
        action="store_true",
        help="keep the direct estimates of bias and noise (no simulated-moments refinement)",
    )


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


def _model(args: argparse.Namespace, run: RecordedRun | None, cal: Calibration | None) -> Any:
    if args.model is not None:
        return load_spec(args.model)
    if run is not None and cal is not None:
        return simulated_spec(run.spec, cal)
    if not DEFAULT_MODEL.is_file():
        raise SpecError("calibrate: this record has no simulated spec of its own; give --model")
    return load_spec(DEFAULT_MODEL)


def run(args: argparse.Namespace, console: Console) -> int:
    """Fit the record, check the fit on held-out task folds, and report it.

    Returns:
        0 whatever the verdict (it is printed); a directory that is not a run, or a
        model that cannot reproduce the record's features, exits 2 through ``SpecError``.
    """
    path = Path(args.rundir)
    if not (path / "episodes.jsonl").is_file():
        raise SpecError(f"{path}: not a run directory (no episodes.jsonl)")
    recorded = _step_record(path)
    report: dict[str, Any] = {}
    calibration: Calibration | None = None
    if recorded is not None:
        calibration = fit(recorded)
        if not args.direct:
            calibration = refine(recorded, calibration)
        result = check(recorded, calibration, args.episodes, args.seed)
        report["check"] = result.to_dict() | {"in_sample": True}
        r = result
        lo, hi = r.recorded_success_ci
        slo, shi = r.recorded_steps_ci
        console.print(
            f"recorded ({len(recorded.episodes)} episodes): success {r.recorded_success:.1%} "
            f"[{lo:.1%}, {hi:.1%}], mean steps {r.recorded_steps:.2f} [{slo:.2f}, {shi:.2f}]",
            highlight=False,
        )
        console.print(
            f"calibrated simulation, in sample (not a validation; {r.episodes} episodes): "
            f"success {r.simulated_success:.1%} "
            f"({'within' if r.success_within else 'OUTSIDE'}), mean steps "
            f"{r.simulated_steps:.2f} ({'within' if r.steps_within else 'OUTSIDE'})",
            highlight=False,
        )
    model: ExperimentSpec = _model(args, recorded, calibration)
    feature = str(model.agent.params.get("task_feature", "write_actions"))
    record = load_record(path, feature, args.shape)
    lengths = _lengths(args, model)
    if lengths is None and model.task.params.get("extra_reads_mean"):  # --no-task-length
        model = apply_changes(model, {"task.params.extra_reads_mean": 0.0}, "--no-task-length")
    variants = _variants(model, args.vary)
    validation = _validate(args, console, record, variants, lengths)
    model = dict(variants)[validation.fitted.structure]
    task_params = validation.effect.task_params()
    if task_params:  # the fitted latent length is the task's: the model's task carries it
        changes = {f"task.params.{k}": v for k, v in task_params.items()}
        model = apply_changes(model, changes, "calibrate")
    agent_params = dict(model.agent.params) | validation.effect.params()
    evidence = dict(calibration.evidence) if calibration is not None else {}
    evidence["task_effect_mean"] = (
        f"simulated maximum likelihood over {len(record.tasks)} tasks, {record.runs} runs"
    )
    snippet = Calibration(agent_params, evidence).to_toml(str(path))
    if recorded is None:  # the task is the model's, not the record's: say which
        snippet += _task_toml(model)
    write_bytes(path / "calibrated.toml", snippet.encode())
    report |= {
        "params": agent_params,
        "evidence": evidence,
        "model": model.name,
        "model_task": model.task.model_dump(),
        "validation": validation.to_dict(),
    }
    write_json(path / "calibration.json", report)
    console.print(snippet, highlight=False, markup=False)
    console.print(validation_table(validation).to_rich())
    failed = validation.failures()
    if not failed:
        console.print(
            "fits: every held-out check passed (pooled, and every fold under Holm)",
            highlight=False,
        )
    else:
        console.print(
            "does NOT fit on held-out tasks: " + ", ".join(failed) + " failed", highlight=False
        )
    console.print(f"wrote {path / 'calibrated.toml'}", highlight=False)
    return 0


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _variants(model: ExperimentSpec, vary: list[str]) -> list[tuple[str, ExperimentSpec]]:
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


def _lengths(args: argparse.Namespace, model: ExperimentSpec) -> tuple[int, ...] | None:
    """The table's latent lengths: ``LENGTH_GRID`` if the task length is fitted, else None."""
    on = args.task_length
    if on is None:
        on = float(model.task.params.get("extra_reads_mean", 0.0) or 0.0) > 0
    if on and model.task.name != "tool_chain":
        raise SpecError(
            f"--task-length: the model's task {model.task.name!r} has no latent length "
            "(tool_chain has: extra_reads_*)"
        )
    return LENGTH_GRID if on else None


def _validate(
    args: argparse.Namespace,
    console: Console,
    record: Any,
    variants: list[tuple[str, ExperimentSpec]],
    lengths: tuple[int, ...] | None = None,
) -> Validation:
    features, cells = table_cells(record, args.cell_episodes, lengths)
    tables = []
    with progress_bar(console) as bar:
        task = bar.add_task("simulating the model's table", total=cells * len(variants))
        for label, spec in variants:
            table = build_table(
                spec,
                features,
                record.feature,
                args.cell_episodes,
                args.seed,
                advance=lambda n: bar.advance(task, n),
                shape=record.shape,
                lengths=lengths,
            )
            tables.append((label, table))
    with console.status("fitting and cross-validating"):
        slope = bool(args.length_slope or _model_slope(variants[0][1]))
        return validate_record(
            record, tables, args.folds, args.seed, args.homogeneous, length_slope=slope
        )


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
