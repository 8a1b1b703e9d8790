"""Sim-to-real: fit the simulated agent's knobs to recorded LLM trajectories.

From a run directory (``steps.jsonl``, and ``calls.jsonl`` when an LLM ran):

- plan quality prior Beta(α, β): beta-binomial maximum likelihood on the
  expert actions out of the steps under each plan (a plan of n steps with
  quality q takes Binomial(n, q) expert actions; raw moments of the shares
  would count that binomial noise as spread of q and return a U-shaped prior);
- self-assessment bias and noise: the mean and spread of δ_task minus the
  progress visible after the action (the next step's observation);
- tokens per phase and generation speed: completion tokens per call, and a
  least-squares fit of model seconds on prompt and completion tokens;
- invalid-format rate: the simulated agent fails an action when a call and
  its retry both fail, so the rate is the square root of the share of steps
  without a valid action.

The direct estimate of bias assumes what the simulated agent assumes: that
δ_task tracks the visible progress.  A small model often does not (it repeats
one number), and a simulated agent with that bias then stops at different
steps.  ``refine`` therefore re-fits bias and noise by simulated moments: a
grid search matching the recorded mean δ_task, mean steps and success rate
on seeded simulated episodes.

``check`` then runs the fitted simulated agent on fresh seeds on the recorded task,
controller and limits, and compares its success rate and mean steps with the
recorded run's 95 % intervals.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.measure.stats import require_scipy, wilson_interval
from opar_sim.spec.build import build
from opar_sim.spec.edit import apply_changes
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.studies.seeds import HOLDOUT_SEED
from opar_sim.traces.recorded import RecordedRun


@dataclass
class Calibration:
    """Fitted parameters, what each was fitted from, and the spec they make."""

    params: dict[str, Any]
    evidence: dict[str, str] = field(default_factory=dict)

    def agent_params(self) -> SimulatedAgentParams:
        """The fitted values as validated simulated-agent parameters (defaults for the rest)."""
        return SimulatedAgentParams.model_validate(self.params)

    def to_toml(self, source: str) -> str:
        """The ``[agent]`` section of a spec, with a comment per fitted value."""
        lines = [
            f"# simulated agent calibrated on {source} (opar-sim calibrate)",
            "[agent]",
            'kind = "simulated"',
            "",
            "[agent.params]",
        ]
        for key, value in self.params.items():
            if isinstance(value, float):
                text = f"{value:.4g}"
            elif isinstance(value, str):
                text = json.dumps(value)  # a TOML basic string
            else:
                text = str(value).lower() if isinstance(value, bool) else str(value)
            if isinstance(value, float) and "." not in text and "e" not in text:
                text += ".0"
            note = self.evidence.get(key, "")
            lines.append(f"{key} = {text}" + (f"  # {note}" if note else ""))
        return "\n".join(lines) + "\n"


def beta_binomial_fit(
    successes: list[int] | np.ndarray, trials: list[int] | np.ndarray
) -> tuple[float, float]:
    """The Beta(α, β) prior of per-unit success chances, by beta-binomial maximum likelihood.

    Unit i has ``trials[i]`` Bernoulli draws with a chance q_i ~ Beta(α, β) and
    ``successes[i]`` successes; the marginal likelihood of the counts is
    Π B(k_i + α, n_i − k_i + β) / B(α, β).  Units with no trials carry nothing.

    Args:
        successes: Successes per unit.
        trials: Draws per unit (≥ the successes).

    Returns:
        (α, β) maximising the likelihood, each within [0.05, 500].
    """
    require_scipy()
    from scipy.optimize import minimize
    from scipy.special import betaln

    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    keep = n > 0
    k, n = k[keep], n[keep]
    if not len(n):
        raise ValueError("beta_binomial_fit needs at least one unit with trials")

    def nll(x: np.ndarray) -> float:
        a, b = np.exp(x)
        return -float(np.sum(betaln(k + a, n - k + b) - betaln(a, b)))

    mean = float(np.clip(k.sum() / n.sum(), 0.02, 0.98))
    start = np.log([2.0 * mean, 2.0 * (1 - mean)])
    bounds = [(np.log(0.05), np.log(500.0))] * 2
    best = minimize(nll, start, method="L-BFGS-B", bounds=bounds)
    alpha, beta = np.exp(best.x)
    return float(alpha), float(beta)


def fit(run: RecordedRun) -> Calibration:
    """Fit the noisy-expert knobs to a recorded run (see the module docstring).

    Args:
        run: The recorded run; its steps give plan quality, bias, noise and the
            invalid-format rate, its model calls the token counts and speeds.

    Returns:
        The fitted simulated-agent parameters with the evidence for each.
    """
    defaults = SimulatedAgentParams()
    params: dict[str, Any] = {}
    evidence: dict[str, str] = {}
    by_episode = run.episode_steps()
    # plan quality: expert actions out of the steps under each plan
    per_plan: dict[tuple[str, int, int, int], list[bool]] = {}
    invalid = valid = 0
    residuals: list[float] = []
    for (ctrl, ep, trial, _attempt), rows in by_episode.items():
        for i, row in enumerate(rows):
            if row["action"] is None:
                invalid += 1
            else:
                valid += 1
                plan = (ctrl, ep, trial, int(row["plan_id"]))
                per_plan.setdefault(plan, []).append(bool(row["expert"]))
            nxt = rows[i + 1] if i + 1 < len(rows) else None
            if row["delta_task"] is not None and nxt is not None:
                residuals.append(float(row["delta_task"]) - float(nxt["visible_progress"]))
    plans = [v for v in per_plan.values() if v]
    if plans:
        experts = [sum(v) for v in plans]
        lengths = [len(v) for v in plans]
        params["plan_alpha"], params["plan_beta"] = beta_binomial_fit(experts, lengths)
        evidence["plan_alpha"] = (
            f"beta-binomial maximum likelihood: {sum(experts)} expert of {sum(lengths)} "
            f"actions over {len(plans)} plans"
        )
        evidence["plan_beta"] = "the same fit"
    if residuals:
        params["bias"] = float(np.clip(np.mean(residuals), -1, 1))
        params["noise"] = float(np.clip(np.std(residuals), 0, 1))
        evidence["bias"] = f"mean of δ_task − visible progress over {len(residuals)} steps"
        evidence["noise"] = "spread of the same"
    steps = invalid + valid
    if steps:
        params["invalid_format_rate"] = math.sqrt(invalid / steps)
        evidence["invalid_format_rate"] = f"{invalid}/{steps} steps without a valid action"
    # a context this short never reached the knee: the recorded run gives no evidence of decay
    params["context_decay"] = 0.0
    evidence["context_decay"] = "not observable in the recorded run; off"
    params |= _fit_tokens(run.calls, evidence)
    params["observe_seconds"] = float(run.spec.agent.params.get("observe_seconds", 0.0))
    merged = defaults.model_dump() | params
    ordered = {k: merged[k] for k in SimulatedAgentParams.model_fields if k in params}
    return Calibration(ordered, evidence)


def _fit_tokens(calls: list[dict[str, Any]], evidence: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    real = [c for c in calls if not c.get("cache_hit") and c.get("attempts")]
    for phase, key in (("plan", "plan_tokens"), ("act", "act_tokens"), ("evaluate", "eval_tokens")):
        tokens = [c["completion_tokens"] / c["attempts"] for c in real if c["phase"] == phase]
        if tokens:
            out[key] = max(1, round(float(np.mean(tokens))))
            evidence[key] = f"mean over {len(tokens)} {phase} calls"
    if real:
        # continuing a plan costs the LLM agent no call; the simulator needs at least a token
        out["continue_tokens"] = 1
        first = [c["prompt_tokens"] / c["attempts"] for c in real]
        out["system_tokens"] = max(0, round(float(np.min(first))))
        evidence["system_tokens"] = "smallest prompt of any call"
        x = np.array([[c["prompt_tokens"], c["completion_tokens"]] for c in real], dtype=float)
        y = np.array([c["model_seconds"] for c in real], dtype=float)
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        per_prompt, per_completion = float(coef[0]), float(coef[1])
        if per_prompt <= 0 or per_completion <= 0:  # not separable: charge it all to generation
            per_prompt = 1e-6
            per_completion = float(y.sum() / max(x[:, 1].sum(), 1.0))
        out["prompt_tokens_per_second"] = 1.0 / per_prompt
        out["tokens_per_second"] = 1.0 / per_completion
        evidence["tokens_per_second"] = f"least squares over {len(real)} calls"
    return out


@dataclass
class CheckResult:
    """The fitted simulated agent against the recorded run."""

    recorded_success: float
    recorded_success_ci: tuple[float, float]
    recorded_steps: float
    recorded_steps_ci: tuple[float, float]
    simulated_success: float
    simulated_steps: float
    episodes: int

    @property
    def success_within(self) -> bool:
        """Whether the simulated success rate lies in the recorded run's Wilson interval."""
        lo, hi = self.recorded_success_ci
        return lo <= self.simulated_success <= hi

    @property
    def steps_within(self) -> bool:
        """Whether the simulated mean steps lie in the recorded run's 95 % interval."""
        lo, hi = self.recorded_steps_ci
        return lo <= self.simulated_steps <= hi

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready mapping, intervals as two-element lists."""
        return {
            "recorded_success": self.recorded_success,
            "recorded_success_ci95": list(self.recorded_success_ci),
            "recorded_mean_steps": self.recorded_steps,
            "recorded_steps_ci95": list(self.recorded_steps_ci),
            "simulated_success": self.simulated_success,
            "simulated_mean_steps": self.simulated_steps,
            "simulated_episodes": self.episodes,
            "success_within": self.success_within,
            "steps_within": self.steps_within,
        }


def mean_interval(values: list[float], z: float = 1.959964) -> tuple[float, float]:
    """A normal-approximation 95 % interval of a mean, never narrower than ±0.5 step."""
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    half = z * float(arr.std(ddof=1)) / math.sqrt(len(arr)) if len(arr) > 1 else 0.0
    half = max(half, 0.5)  # steps are integers: a zero-width interval would test nothing
    return (mean - half, mean + half)


def simulated_spec(spec: ExperimentSpec, calibration: Calibration) -> ExperimentSpec:
    """The recorded experiment with the calibrated simulated agent in the LLM's place."""
    agent = {"kind": "simulated", "params": calibration.params}
    return apply_changes(spec, {"agent": agent}, "calibration")


def check(
    run: RecordedRun, calibration: Calibration, episodes: int = 1000, seed: int = 0
) -> CheckResult:
    """Run the calibrated simulated agent and compare it with the recorded run.

    Only the recorded run's first controller is compared; the simulated
    episodes use fresh seeds derived from ``seed``.

    Args:
        run: The recorded run (its spec gives the task, controller and limits).
        calibration: The fitted parameters, from ``fit`` or ``refine``.
        episodes: How many simulated episodes to run.
        seed: The base seed of the simulated episodes.

    Returns:
        The recorded success rate and mean steps with their 95 % intervals beside
        the simulated ones.
    """
    spec = simulated_spec(run.spec, calibration)
    parts = build(spec)
    make_controller = parts.controllers[0][1]
    recorded = [e for e in run.episodes if e["controller"] == parts.controllers[0][0]]
    task, agent = parts.make_task(), parts.make_agent()
    successes, steps = 0, 0
    for i in range(episodes):
        result = run_episode(
            task, agent, make_controller(), parts.limits, episode_seed(seed + HOLDOUT_SEED, i)
        )
        successes += result.success
        steps += len(result.steps)
    n = len(recorded)
    wins = sum(bool(e["success"]) for e in recorded)
    return CheckResult(
        recorded_success=wins / n,
        recorded_success_ci=wilson_interval(wins, n),
        recorded_steps=sum(e["steps"] for e in recorded) / n,
        recorded_steps_ci=mean_interval([float(e["steps"]) for e in recorded]),
        simulated_success=successes / episodes,
        simulated_steps=steps / episodes,
        episodes=episodes,
    )


BIAS_GRID = tuple(float(b) for b in np.round(np.linspace(-0.6, 0.6, 25), 3))
NOISE_GRID = (0.02, 0.05, 0.1, 0.2, 0.3)


def _simulate(
    spec: ExperimentSpec, params: dict[str, Any], episodes: int, seed: int
) -> tuple[float, float, float]:
    """(success rate, mean steps, mean δ_task) of the simulated agent with ``params``."""
    parts = build(apply_changes(spec, {"agent": {"kind": "simulated", "params": params}}, "refine"))
    make_controller = parts.controllers[0][1]
    task, agent = parts.make_task(), parts.make_agent()
    wins = steps = 0
    delta_sum, delta_n = 0.0, 0
    for i in range(episodes):
        result = run_episode(task, agent, make_controller(), parts.limits, episode_seed(seed, i))
        wins += result.success
        steps += len(result.steps)
        for rec in result.steps:
            if rec.evaluation is not None:
                delta_sum += rec.evaluation.delta_task
                delta_n += 1
    return wins / episodes, steps / episodes, delta_sum / max(delta_n, 1)


def refine(run: RecordedRun, calibration: Calibration, episodes: int = 300) -> Calibration:
    """Re-fit bias and noise by simulated moments (see the module docstring)."""
    recorded = [e for e in run.episodes if e["controller"] == run.spec.controller_list()[0].name]
    n = len(recorded)
    success = sum(bool(e["success"]) for e in recorded) / n
    steps = np.array([float(e["steps"]) for e in recorded])
    deltas = [float(r["delta_task"]) for r in run.steps if r["delta_task"] is not None]
    delta = float(np.mean(deltas)) if deltas else 0.5
    # scales: the standard errors of the recorded moments, floored so none is ignored
    steps_se = max(float(steps.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0, 0.25)
    success_se = max(math.sqrt(success * (1 - success) / n), 0.5 / n)
    best: tuple[float, float, float] | None = None
    for bias in BIAS_GRID:
        for noise in NOISE_GRID:
            trial = calibration.params | {"bias": bias, "noise": noise}
            s_rate, s_steps, s_delta = _simulate(run.spec, trial, episodes, seed=7)
            loss = (
                ((s_delta - delta) / 0.2) ** 2  # a coarse level: outcomes hinge on thresholds
                + ((s_steps - float(steps.mean())) / steps_se) ** 2
                + ((s_rate - success) / success_se) ** 2
            )
            if best is None or loss < best[0]:
                best = (loss, bias, noise)
    assert best is not None
    _, bias, noise = best
    evidence = dict(calibration.evidence)
    direct_bias, direct_noise = calibration.params.get("bias"), calibration.params.get("noise")
    evidence["bias"] = (
        f"simulated moments (mean δ_task {delta:.2f}, steps, success); direct estimate "
        f"{direct_bias if direct_bias is None else round(direct_bias, 3)}"
    )
    evidence["noise"] = (
        f"simulated moments; direct estimate "
        f"{direct_noise if direct_noise is None else round(direct_noise, 3)}"
    )
    params = calibration.params | {"bias": bias, "noise": noise}
    ordered = {k: params[k] for k in SimulatedAgentParams.model_fields if k in params}
    return Calibration(ordered, evidence)
