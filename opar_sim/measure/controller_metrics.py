"""One controller's episodes of a run aggregated: success, pass^k, cost, response, regret.

pass^k is τ-bench's over worlds: the rows of one episode index (its
``trials``) are the attempts at one world, judged by their last Reflexion
attempt.  A run with one trial per world has pass^1 only; pass^k for k > 1
is reported missing (NaN), not estimated from different worlds.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from opar_sim.measure.episode_metrics import EpisodeTable
from opar_sim.measure.pass_k import pass_hat_ks, success_histogram, world_intervals
from opar_sim.measure.stats import Estimate, Proportion, bootstrap_mean, paired_difference
from opar_sim.measure.stats import success_rate as proportion

ORACLE = "oracle"
PASS_K = (1, 2, 4, 8)


def _median(values: npt.ArrayLike) -> float:
    x = np.asarray(values, float)
    x = x[~np.isnan(x)]
    return float(np.median(x)) if x.size else math.nan


def _mean(values: npt.ArrayLike) -> float:
    x = np.asarray(values, float)
    return float(x.mean()) if x.size else math.nan


@dataclass(frozen=True, slots=True)
class ControllerMetrics:
    """Everything measured for one controller over a run."""

    controller: str
    episodes: int
    success: Proportion
    pass_k: dict[int, float]  # k -> pass^k over worlds; NaN where k > trials
    # k -> pass^k's 95 % interval, bootstrapped by world (empty with one trial per world)
    pass_k_ci: dict[int, tuple[float, float]]
    trials: int  # runs of each world
    worlds: int  # worlds with all their trials
    world_successes: list[int]  # worlds with 0..trials successes
    steps: Estimate
    tokens: Estimate
    sim_seconds: Estimate
    outcomes: dict[str, int]
    premature_share: float
    replans: Estimate  # REPLAN decisions per episode
    replan_rate: float  # REPLAN decisions per step
    thrash_share: float  # of all REPLANs, those within k steps of the previous one
    mean_dwell: float  # steps between successive REPLANs
    mean_dwell_seconds: float  # simulated seconds between successive REPLANs
    sign_changes: float  # of the estimated error's trend, per episode
    oscillating_share: float  # episodes whose estimate swings through ≥ 3 peaks
    damping_ratio: float  # median ζ over episodes with ≥ 2 peaks
    decay_ratio: float  # median decay ratio over the same episodes
    cycle_share: float  # episodes with an action cycle (a→b→a→b, ...)
    settled_share: float  # episodes whose true progress settled in the 2 % band
    rise_time: float  # median, simulated seconds
    settling_time: float  # median over settled episodes, simulated seconds
    settling_step: float  # median over settled episodes, steps
    overshoot: float  # mean percent
    iae: float  # mean ∫|1 − p| dt up to the horizon, progress·s
    est_settled_share: float  # the same for the agent's estimate
    est_settling_time: float
    mean_gap: float  # mean of δ_task − p
    final_gap: float  # mean of δ_task − p at the last step
    regret: Estimate | None  # oracle success − this success, paired per episode
    token_regret: Estimate | None  # this controller's tokens − the oracle's, paired per episode

    def row(self) -> dict[str, Any]:
        """A flat mapping of the fields (intervals as _low/_high)."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, Estimate):
                out |= {name: value.mean, f"{name}_low": value.low, f"{name}_high": value.high}
            elif isinstance(value, Proportion):
                out |= {"success_rate": value.rate, "success_low": value.low}
                out["success_high"] = value.high
            elif name == "pass_k":
                out |= {f"pass^{k}": v for k, v in value.items()}
            elif name == "pass_k_ci":
                for k, (low, high) in value.items():
                    out |= {f"pass^{k}_low": low, f"pass^{k}_high": high}
            elif name == "world_successes":
                out |= {f"worlds:{c}/{self.trials}": v for c, v in enumerate(value)}
            elif name == "outcomes":
                out |= {f"outcome:{k}": v for k, v in value.items()}
            elif value is None:
                out |= {name: math.nan, f"{name}_low": math.nan, f"{name}_high": math.nan}
            else:
                out[name] = value
        return out


def controller_metrics(
    name: str,
    episodes: EpisodeTable,
    successes: list[bool],
    rng: np.random.Generator,
    oracle: tuple[EpisodeTable, list[bool]] | None,
    trials: int,
) -> ControllerMetrics:
    """Aggregate one controller's episodes (every trial of every world).

    Args:
        name: The controller.
        episodes: Its episodes' metrics, in file order.
        successes: Whether each of ``episodes`` succeeded.
        rng: The generator of the bootstrap intervals.
        oracle: The oracle's episodes and successes, for paired regret, or None.
        trials: The runs of each world (the spec's ``trials``).

    Returns:
        The controller's metrics.
    """
    e = episodes
    n = len(e)
    keys = e.keys()
    worlds = _worlds(keys, successes)
    pass_k = {k: math.nan for k in PASS_K} | pass_hat_ks(worlds, trials)
    outcomes = Counter(e.outcome)
    replans = int(e.replans.sum())
    total_steps = int(e.steps.sum())
    many = e.replans > 1
    dwell_n = int(np.maximum(e.replans - 1, 0).sum())
    # Python sums in episode order, as the per-episode aggregation took them
    dwell_sum = sum((e.dwell[many] * (e.replans[many] - 1)).tolist())
    dwell_s = sum((e.dwell_seconds[many] * (e.replans[many] - 1)).tolist())
    settled = ~np.isnan(e.true["settling_time"])
    regret = token_regret = None
    if oracle is not None and name != ORACLE:
        o, o_success = oracle
        o_keys = o.keys()
        mine = dict(zip(keys, map(float, successes), strict=True))
        best = dict(zip(o_keys, map(float, o_success), strict=True))
        regret = paired_difference(best, mine, rng)
        token_regret = paired_difference(
            dict(zip(keys, map(float, e.tokens.tolist()), strict=True)),
            dict(zip(o_keys, map(float, o.tokens.tolist()), strict=True)),
            rng,
        )
    histogram = success_histogram(worlds, trials)
    success = proportion(sum(successes), n)
    pass_k_ci: dict[int, tuple[float, float]] = {}
    if trials > 1:  # a world's trials are not independent: resample worlds, not episodes
        (low, high), pass_k_ci = world_intervals(worlds, trials)
        success = Proportion(success.successes, success.n, low, high)
    return ControllerMetrics(
        controller=name,
        episodes=n,
        success=success,
        pass_k=dict(sorted(pass_k.items())),
        pass_k_ci=pass_k_ci,
        trials=trials,
        worlds=sum(histogram),
        world_successes=histogram,
        steps=bootstrap_mean(e.steps.astype(float), rng),
        tokens=bootstrap_mean(e.tokens.astype(float), rng),
        sim_seconds=bootstrap_mean(e.sim_seconds, rng),
        outcomes=dict(sorted(outcomes.items())),
        premature_share=outcomes.get("premature", 0) / n if n else math.nan,
        replans=bootstrap_mean(e.replans.astype(float), rng),
        replan_rate=replans / total_steps if total_steps else 0.0,
        thrash_share=int(e.thrash.sum()) / replans if replans else 0.0,
        mean_dwell=dwell_sum / dwell_n if dwell_n else math.nan,
        mean_dwell_seconds=dwell_s / dwell_n if dwell_n else math.nan,
        sign_changes=_mean(e.sign_changes),
        oscillating_share=_mean(e.oscillating),
        damping_ratio=_median(e.damping_ratio),
        decay_ratio=_median(e.decay_ratio),
        cycle_share=_mean(e.cycles > 0),
        settled_share=int(settled.sum()) / n if n else math.nan,
        rise_time=_median(e.true["rise_time"]),
        settling_time=_median(e.true["settling_time"][settled]),
        settling_step=_median(e.settling_step[settled]),
        overshoot=_mean(e.true["overshoot"]),
        iae=_mean(e.true["iae"]),
        est_settled_share=_mean(~np.isnan(e.estimate["settling_time"])),
        est_settling_time=_median(e.estimate["settling_time"]),
        mean_gap=_mean(e.gap["mean_gap"]),
        final_gap=_mean(e.gap["final_gap"]),
        regret=regret,
        token_regret=token_regret,
    )


def _worlds(keys: list[tuple[int, int, int]], successes: list[bool]) -> dict[int, list[bool]]:
    """World (episode index) -> the success of each trial, judged by its last attempt."""
    last: dict[tuple[int, int], bool] = {}
    for (episode, trial, _), s in zip(keys, successes, strict=True):
        last[(episode, trial)] = s  # Reflexion attempts come in order: the last wins
    worlds: dict[int, list[bool]] = {}
    for (episode, _), s in last.items():
        worlds.setdefault(episode, []).append(s)
    return worlds
