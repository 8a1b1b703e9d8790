"""Every word the outputs use, defined once: ``opar-sim glossary`` prints it (docs/glossary.md too).

One word per meaning: "settling time" is the control-theory measure of true progress (the
2 % band), "settle rule" the PID's TERMINATE rule; "pace error" is what the shipped PID
acts on; a p-value is "p", the PID's proportional term "P term".
"""

from __future__ import annotations

GLOSSARY: dict[str, str] = {
    "δ_task (delta_task)": "the agent's own estimate, in [0, 1], of how much of the task is "
    "done (the Reflect phase's self-evaluation); the task error is 1 − δ_task",
    "δ_act (delta_act)": "how well the last action worked, in [0, 1]: 1 made progress, about "
    "0.6 did nothing new, about 0.1 failed",
    "δ_plan (delta_plan)": "how far the current plan has drifted from the task, in [0, 1]; a "
    "high value says the plan no longer fits",
    "confidence": "the agent's stated confidence in its evaluation, in [0, 1]",
    "true progress": "the task's hidden ground truth, in [0, 1], that the agent never sees; "
    "solid lines in the figures, against the dashed estimate δ_task",
    "task error": "1 − δ_task: what a controller drives to zero",
    "pace error": "how far the current plan lags behind an expected pace of progress: "
    "pace × the plan's age in steps − the δ_task gained since the plan began, clipped to "
    "[0, 1]; what the shipped PID's REPLAN effort acts on (pace 0.17); with pace = 0 the "
    "PID acts on the task error instead; 'pace err' in the trace viewer and figures",
    "P term, I term, D term": "the PID's proportional (current error × kp), integral "
    "(accumulated error × ki) and derivative (error trend × kd) parts of its effort; the "
    "trace viewer labels them so ('p' alone is never the P term: it is a p-value)",
    "effort": "the PID's output, the sum of its terms; above replan_threshold it REPLANs",
    "CONTINUE, REPLAN, TERMINATE": "the three decisions of the Reflect phase: go on with the "
    "plan, make a new plan, stop (done, or give up with give_up)",
    "give_up": "a TERMINATE that says the task cannot be done (the outcome is then judged "
    "against the hidden feasibility)",
    "settle rule": "the PID's TERMINATE rule: stop once the task error stays within "
    "settle_band for settle_count steps",
    "settling time": "the control-theory measure of true progress: the first time after "
    "which progress stays within 2 % of its final value (compare --detail's 'settling s' and "
    "'settling step'; unrelated to the settle rule)",
    "confirm": "the stop confirmation shared by every law (spec [guards] confirm = K): a "
    "TERMINATE takes effect only after K stop decisions in a row",
    "screened": "a tuning trial scored on the fast batch engine first; the best few "
    "(finalists) are re-scored on the SimPy engine",
    "incumbent": "the gains a spec uses now; tune always scores them beside its candidates "
    "and recommends new gains only when they beat them on held-out episodes",
    "replicate": "one independent tuning run (its own training seed and sampler seed); "
    "tune and shootout report the spread over replicates",
    "hold-out seed": "episodes no tuning, default or development run has seen; what a "
    "recommendation is scored on (the seed ledger, opar_sim/studies/seeds.py)",
    "pass^k": "the chance that k attempts at the same world all succeed (τ-bench's "
    "estimator over worlds with repeated trials); needs a spec with trials ≥ k",
    "regret": "a reference law's success minus this law's, paired on the same episodes "
    "(can be negative: the reference is not a bound)",
    "thrash": "a REPLAN within a few steps (thrash-k, default 2) of the previous one",
    "premature": "an episode stopped as done before the task was complete",
    "truncated:<reason>": "an episode cut by a hard limit (max_steps, time_budget, "
    "token_budget) rather than ended by a decision",
    "McNemar p": "the exact test of paired successes: only episodes where the two laws "
    "disagree count; p ≥ 0.05 is no evidence of a difference",
    "Holm-adjusted p": "a p-value corrected for testing many claims at once (Holm's "
    "step-down); verdicts use it",
    "[a, b]": "a 95 % interval: paired bootstrap for differences, Wilson for a single "
    "success rate, bootstrap over worlds with repeated trials",
}
