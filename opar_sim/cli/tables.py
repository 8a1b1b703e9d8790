"""Every table opar-sim shows, as plain rows: rendered by rich in the terminal and as HTML.

``TextTable`` is the one renderer; each command builds its tables here or
with it.  ``comparison_table`` is what ``opar-sim compare`` prints;
``response_table`` holds the step-response and oscillation details the
report adds; ``world_table`` the per-world success histogram of a run with
repeated trials.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from opar_sim.calibration.heterogeneity import Validation
from opar_sim.measure.run import RunAnalysis
from opar_sim.measure.stats import Estimate
from opar_sim.measure.table import TextTable as TextTable  # the commands import it from here


def _num(value: float, fmt: str = ".1f") -> str:
    return "–" if value is None or math.isnan(value) else format(value, fmt)


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1%}"


def comparison_table(analysis: RunAnalysis) -> TextTable:
    """Success, cost, replanning and stopping errors per controller; regret if an oracle ran."""
    k = analysis.thrash_k
    ks = pass_columns(analysis)
    columns = [
        "controller",
        "n",
        "success (95% CI)",
        *(f"pass^{j}" for j in ks),
        "steps",
        "tokens",
        "replans",
        "thrash",
        "cycles",
        "premature",
    ]
    if analysis.has_oracle:
        columns.append("regret (pp)")
    against_bayes = analysis.regret_to("bayes") if analysis.has_bayes else {}
    voi = analysis.value_of_information()
    if analysis.has_bayes:
        columns.append("difference to bayes (can be negative)")
    if voi is not None:
        columns.append("oracle − bayes (two reference laws)")
    rows = []
    for name, m in analysis.controllers.items():
        s = m.success
        row = [
            name,
            str(m.episodes),
            f"{100 * s.rate:.1f}% ({100 * s.low:.1f}-{100 * s.high:.1f})",
            *(_pct(m.pass_k.get(j, math.nan)) for j in ks),
            _num(m.steps.mean),
            f"{m.tokens.mean:,.0f}",
            _num(m.replans.mean, ".2f"),
            _pct(m.thrash_share),
            _pct(m.cycle_share),
            _pct(m.premature_share),
        ]
        if analysis.has_oracle:
            r = m.regret
            row.append(_pp(r))
        if analysis.has_bayes:
            row.append(_pp(against_bayes.get(name)))
        if voi is not None:
            row.append(_pp(voi) if name not in ("bayes", "oracle") else "–")
        rows.append(row)
    trials = _trials(analysis)
    if trials > 1:
        what = (
            f"pass^k: chance that k of a world's {trials} trials, drawn without replacement, "
            "all succeed, averaged over worlds (τ-bench)"
        )
    else:
        what = "pass^4: needs a spec with trials >= 4 (repeated runs of each world); – here"
    notes = [
        f"n: episodes (every trial of every world); success: Wilson 95% interval; {what}",
        "steps, tokens, replans: means per episode (replans: REPLAN decisions that made a new "
        "plan, the count of summary.json)",
        f"thrash: share of REPLANs within {k} steps of the previous one; cycles: episodes "
        "with an action cycle (a→b→a→b, ...); premature: episodes stopped before the task "
        "was done",
    ]
    if analysis.has_oracle:
        notes.append(
            "regret: oracle's success minus this controller's, percentage points, paired on "
            "the same seeds, bootstrap 95% interval"
        )
    if analysis.has_bayes:
        notes.append(
            "difference to bayes: bayes's success minus this controller's, percentage points, "
            "paired, bootstrap 95% interval; bayes is the Bayes decision on an approximate "
            "model of the loop, not a bound, so the difference can be negative"
        )
    if voi is not None:
        notes.append(
            "oracle − bayes: the oracle's success minus bayes's in percentage points (the "
            "same for every controller): the gap between two reference laws, neither a bound"
        )
    return TextTable(_title(analysis, "controllers compared"), columns, rows, notes)


def _pp(r: Estimate | None) -> str:
    """A paired success difference in percentage points with its interval, or '–'."""
    if r is None:
        return "–"
    return f"{100 * r.mean:+.1f} ({100 * r.low:.1f}-{100 * r.high:.1f})"


def pass_columns(analysis: RunAnalysis) -> list[int]:
    """The k of the pass^k columns: 1..trials, or just 4 (shown missing) with one trial.

    Args:
        analysis: The run analysis.

    Returns:
        The k values to show, in order.
    """
    trials = _trials(analysis)
    return list(range(1, trials + 1)) if trials > 1 else [4]


def world_table(analysis: RunAnalysis) -> TextTable:
    """Per controller, how many worlds had 0, 1, .., trials successes.

    Args:
        analysis: The run analysis.

    Returns:
        The histogram table (columns ``c/n``: worlds with c successes in n trials).
    """
    trials = _trials(analysis)
    columns = ["controller", "worlds", *(f"{c}/{trials}" for c in range(trials + 1))]
    rows = [
        [name, str(m.worlds), *(str(v) for v in m.world_successes)]
        for name, m in analysis.controllers.items()
    ]
    notes = [
        f"worlds with c successes in their {trials} trials (the task stream shared, the "
        "agent's, tools' and controller's fresh per trial); worlds missing a trial are left out"
    ]
    return TextTable(_title(analysis, "successes per world"), columns, rows, notes)


def _trials(analysis: RunAnalysis) -> int:
    return max((m.trials for m in analysis.controllers.values()), default=1)


def response_table(analysis: RunAnalysis) -> TextTable:
    """Step response of progress and oscillation of the estimated error, per controller."""
    columns = [
        "controller",
        "rise s",
        "settle s",
        "settle step",
        "settled",
        "IAE",
        "est settled",
        "gap",
        "end gap",
        "flips",
        "osc",
        "ζ",
        "dwell",
    ]
    if analysis.has_oracle:
        columns.append("Δtokens")
    rows = []
    for name, m in analysis.controllers.items():
        extra = []
        if analysis.has_oracle:
            extra = ["–" if m.token_regret is None else f"{m.token_regret.mean:+,.0f}"]
        rows.append(
            [
                name,
                _num(m.rise_time),
                _num(m.settling_time),
                _num(m.settling_step, ".0f"),
                _pct(m.settled_share),
                _num(m.iae),
                _pct(m.est_settled_share),
                _num(m.mean_gap, "+.3f"),
                _num(m.final_gap, "+.3f"),
                _num(m.sign_changes),
                _pct(m.oscillating_share),
                _num(m.damping_ratio, ".2f"),
                _num(m.mean_dwell),
                *extra,
            ]
        )
    notes = [
        "rise (10-90%), settle (2% band) and IAE of the true progress against its goal 1.0, "
        "in simulated seconds (medians; settling over settled episodes; IAE up to the time "
        "budget)",
        "est settled: the agent's own estimate δ_task settled; gap, end gap: mean δ_task - p "
        "over the steps and at the last step (> 0: over-confident)",
        "flips: sign changes of the estimated error's trend per episode; osc: "
        "episodes whose estimate swings through >= 3 peaks; ζ: median damping ratio from the "
        "logarithmic decrement; dwell: steps between REPLANs",
    ]
    if analysis.has_oracle:
        notes.append("Δtokens: tokens per episode beyond the oracle's, paired on the same seeds")
    return TextTable(_title(analysis, "convergence and oscillation"), columns, rows, notes)


def summary_table(summary: Mapping[str, Mapping[str, Any]], title: str) -> TextTable:
    """One row per controller of summary.json: success with its 95 % interval, mean costs.

    Args:
        summary: ``summary.json``'s mapping of controller -> statistics.
        title: The table's title.

    Returns:
        The table, for the terminal or the HTML report.
    """
    columns = ["controller", "n", "success (95% CI)", "steps", "tokens", "sim s", "replans"]
    rows = []
    for name, s in summary.items():
        lo, hi = s["success_ci95"]
        rows.append(
            [
                name,
                str(s["episodes"]),
                f"{s['success_rate']:.1%} ({lo:.1%}-{hi:.1%})",
                f"{s['mean_steps']:.1f}",
                f"{s['mean_tokens']:,.0f}",
                f"{s['mean_sim_seconds']:.1f}",
                f"{s['mean_replans']:.2f}",
            ]
        )
    return TextTable(title, columns, rows, [])


def outcome_table(outcomes: Mapping[str, Mapping[str, int]]) -> TextTable:
    """Episodes per outcome (rows) and controller (columns).

    Args:
        outcomes: Controller -> outcome -> episodes (summary.json's ``outcomes``, or the
            analysis' ``ControllerMetrics.outcomes``).

    Returns:
        The table.
    """
    names = list(outcomes)
    kinds = sorted({k for counts in outcomes.values() for k in counts})
    rows = [[kind, *(str(outcomes[n].get(kind, 0)) for n in names)] for kind in kinds]
    return TextTable("outcomes (episodes)", ["outcome", *names], rows, [])


def analysis_outcomes(analysis: RunAnalysis) -> dict[str, dict[str, int]]:
    """Controller -> outcome -> episodes, from a run analysis."""
    return {name: m.outcomes for name, m in analysis.controllers.items()}


def _title(analysis: RunAnalysis, what: str) -> str:
    name = analysis.spec.name if analysis.spec is not None else analysis.path.name
    return f"{name}: {what}"


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
    return TextTable("calibration checked on held-out tasks", columns, rows, notes, left=1)


def _vs(model: float, record: float, low: float, high: float, fmt: str) -> str:
    if math.isnan(record):
        return f"{_num(model, fmt)} vs –"
    return f"{_num(model, fmt)} vs {_num(record, fmt)} [{_num(low, fmt)}, {_num(high, fmt)}]"
