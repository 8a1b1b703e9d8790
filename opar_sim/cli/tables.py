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

from opar_sim.measure.diff import ControllerDiff
from opar_sim.measure.run import RunAnalysis
from opar_sim.measure.stats import Estimate
from opar_sim.measure.table import TextTable as TextTable  # the commands import it from here


def _num(value: float, fmt: str = ".1f") -> str:
    return "–" if value is None or math.isnan(value) else format(value, fmt)


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1%}"


def _pass(m: Any, k: int) -> str:
    """pass^k with its world-bootstrap interval where there is one."""
    value = m.pass_k.get(k, math.nan)
    low, high = m.pass_k_ci.get(k, (math.nan, math.nan))
    if math.isnan(value) or math.isnan(low):
        return _pct(value)
    return f"{_pct(value)} [{100 * low:.1f}, {100 * high:.1f}]"


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
    # dropped first on a narrow terminal: cycles and thrash, then n and pass^k, then the rest
    priority = [0, 2, 0, *(2 for _ in ks), 1, 0, 1, 3, 3, 1]
    if analysis.has_oracle:
        columns.append("regret (pp)")
        priority.append(1)
    against_bayes = analysis.regret_to("bayes") if analysis.has_bayes else {}
    voi = analysis.value_of_information()
    if analysis.has_bayes:
        columns.append("difference to bayes (can be negative)")
        priority.append(2)
    if voi is not None:
        columns.append("oracle − bayes (two reference laws)")
        priority.append(3)
    rows = []
    for name, m in analysis.controllers.items():
        s = m.success
        row = [
            name,
            str(m.episodes),
            f"{100 * s.rate:.1f}% [{100 * s.low:.1f}, {100 * s.high:.1f}]",
            *(_pass(m, j) for j in ks),
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
        what = "pass^k: shown for a spec with trials >= 2 (--trials N: each world run N times)"
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
    return TextTable(
        _title(analysis, "controllers compared"), columns, rows, notes, priority=tuple(priority)
    )


def _pp(r: Estimate | None) -> str:
    """A paired success difference in percentage points with its interval, or '–'."""
    if r is None:
        return "–"
    return f"{100 * r.mean:+.1f} ({100 * r.low:.1f}-{100 * r.high:.1f})"


def pass_columns(analysis: RunAnalysis) -> list[int]:
    """The k of the pass^k columns: 1..trials, none with one trial (nothing to show).

    Args:
        analysis: The run analysis.

    Returns:
        The k values to show, in order.
    """
    trials = _trials(analysis)
    return list(range(1, trials + 1)) if trials > 1 else []


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
        "settling s",
        "settling step",
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
    priority = [0, 1, 0, 2, 1, 2, 1, 1, 2, 3, 2, 3, 3]
    if analysis.has_oracle:
        columns.append("Δtokens")
        priority.append(2)
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
        "rise (10-90%), settling time (within 2 % of the goal for good; not the PID's settle "
        "rule) and IAE of the true progress against its goal 1.0, in simulated seconds "
        "(medians; settling over settled episodes; IAE up to the time budget)",
        "est settled: the agent's own estimate δ_task settled; gap, end gap: mean δ_task − "
        "true progress over the steps and at the last step (> 0: over-confident)",
        "flips: sign changes of the estimated error's trend per episode; osc: "
        "episodes whose estimate swings through >= 3 peaks; ζ: median damping ratio from the "
        "logarithmic decrement; dwell: steps between REPLANs",
    ]
    if analysis.has_oracle:
        notes.append("Δtokens: tokens per episode beyond the oracle's, paired on the same seeds")
    return TextTable(
        _title(analysis, "convergence and oscillation"),
        columns,
        rows,
        notes,
        priority=tuple(priority),
    )


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


# TextTable lives in opar_sim.measure.table; the commands still import it from here too
__all__ = [
    "TextTable",
    "analysis_outcomes",
    "comparison_table",
    "interval",
    "outcome_table",
    "paired_rows",
    "pass_columns",
    "reference_table",
    "response_table",
    "summary_table",
    "world_table",
]


def interval(e: Estimate, fmt: str, scale: float = 1.0) -> str:
    """A signed estimate and its 95 % interval, written ``+1.2 [-0.4, +2.8]``."""
    if math.isnan(e.mean):
        return "–"
    m, lo, hi = (scale * v for v in (e.mean, e.low, e.high))
    return f"{m:+{fmt}} [{lo:+{fmt}}, {hi:+{fmt}}]"


# the measures of a paired comparison: name, format of a mean, format of a difference, scale
_MEASURES = {
    "success": (".1%", ".1f", 100.0),
    "steps": (".2f", ".2f", 1.0),
    "tokens": (",.0f", ",.0f", 1.0),
    "replans": (".2f", ".2f", 1.0),
}


def paired_rows(d: ControllerDiff, name: str, measures: tuple[str, ...]) -> list[list[str]]:
    """One row per measure: A's mean, B's, and B − A with its 95 % interval (p for success).

    One measure a row keeps the table narrow (it fits 100 columns) however many are shown.
    """
    rows = []
    for k, measure in enumerate(measures):
        mean_fmt, diff_fmt, scale = _MEASURES[measure]
        if measure == "success":
            a, b = d.success_a.rate, d.success_b.rate
            delta, p = interval(d.success_diff, diff_fmt, scale) + " pp", f"{d.mcnemar_p:.2g}"
        else:
            a, b = d.means_a[measure], d.means_b[measure]
            delta, p = interval(d.diffs[measure], diff_fmt, scale), ""
        shown = name if k == 0 else ""
        rows.append([shown, measure, f"{a:{mean_fmt}}", f"{b:{mean_fmt}}", delta, p])
    return rows


def reference_table(diffs: list[ControllerDiff], reference: str) -> TextTable:
    """``compare``'s first table: each law minus the reference law, paired on the same episodes.

    Args:
        diffs: Each other law against the reference (``measure.diff.against_reference``).
        reference: The reference law's name.

    Returns:
        Per law, a row each for success (McNemar p), tokens and REPLANs per episode: the
        reference's mean, the law's, and the paired difference with its 95 % interval.
    """
    rows = [
        r for d in diffs for r in paired_rows(d, d.controller, ("success", "tokens", "replans"))
    ]
    n = diffs[0].common if diffs else 0
    columns = ["law", "measure", reference, "law", "law − " + reference, "p"]
    notes = [
        f"{n} episodes per law, paired: the laws of a run see the same worlds; [a, b]: 95 % "
        "paired bootstrap interval; p: exact McNemar",
        "an interval that contains 0, or p ≥ 0.05, is no evidence of a difference",
    ]
    return TextTable(f"paired differences to {reference}", columns, rows, notes, left=2)
