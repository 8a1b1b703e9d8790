"""Classic tuning on the ``plant`` task: a relay test, Ziegler–Nichols and Tyreus–Luyben.

The relay test (Åström–Hägglund) drives the plant with u = u₀ ± h, switching
when the measured error crosses a hysteresis band ±ε.  The loop settles into
a limit cycle of period P_u and amplitude a, and the describing function
gives the ultimate gain K_u ≈ 4h / (π·√(a² − ε²)).  From (K_u, P_u):

* Ziegler–Nichols PID: K_p = 0.6·K_u, T_i = P_u/2, T_d = P_u/8;
* Tyreus–Luyben PID:  K_p = K_u/2.2, T_i = 2.2·P_u, T_d = P_u/6.3;

in the parallel form the ``CognitivePID`` uses (one sample = one second):
k_p = K_p, k_i = K_p/T_i, k_d = K_p·T_d.  These are the baseline a gain
tuner must beat: ``tune_plant`` searches (k_p, k_i, k_d) with Optuna on
training seeds and scores all three on held-out seeds by the integral of the
absolute error (IAE) of a set-point step with the plant's load disturbance.

``relay(spec, budget, executor)`` is the study: the relay test on the spec's plant, the
classic gains from it, and the tuner against them on held-out seeds.  Its ``RelayStudy``
has the command's ``table()``, ``to_dict()`` (``relay.json``) and ``gains_toml()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import simpy

import environments
from controllers import CognitivePID
from environments.plant import SET_POINT, Plant
from opar_sim.core.seeding import episode_seed, streams
from opar_sim.measure.table import TextTable
from opar_sim.running.executors import ExecutorConfig
from opar_sim.running.search import minimize, paired_bootstrap
from opar_sim.running.stages import Note, Stage, no_note, no_stage
from opar_sim.spec.schema import ExperimentSpec, ParamRange, SpecError
from opar_sim.studies.seeds import HOLDOUT_SEED


@dataclass(frozen=True)
class PIDGains:
    """Parallel-form PID gains, per sample."""

    kp: float
    ki: float
    kd: float

    def as_dict(self) -> dict[str, float]:
        """The gains keyed ``kp``, ``ki``, ``kd``, as the controller's parameters are named."""
        return {"kp": self.kp, "ki": self.ki, "kd": self.kd}


@dataclass(frozen=True)
class RelayResult:
    """What the relay test measured, and the plant's true ultimate gain for comparison."""

    ultimate_gain: float  # K_u from the describing function
    ultimate_period: float  # P_u, in samples
    amplitude: float
    true_ultimate_gain: float  # from the plant's characteristic polynomial
    outputs: list[float]
    inputs: list[float]


def make_plant(params: Mapping[str, Any], seed: int, episode: int = 0) -> Plant:
    """A plant reset on the seed of ``episode`` (its noise and load-step time)."""
    task = environments.make("plant", **params)
    if not isinstance(task, Plant):
        raise TypeError("the plant task is not a Plant")
    rngs = streams(episode_seed(seed, episode))
    task.reset(simpy.Environment(), rngs.task, rngs.tools)
    return task


def relay_test(
    params: Mapping[str, Any], seed: int, h: float = 0.5, samples: int = 400
) -> RelayResult:
    """Run the relay test with the load step switched off; estimate K_u and P_u."""
    quiet = {**params, "disturbance": 0.0}
    plant = make_plant(quiet, seed)
    u0 = SET_POINT / plant.params.gain
    eps = 3.0 * plant.params.noise
    measured = plant.measured
    high = True
    switches: list[int] = []
    inputs: list[float] = []
    for k in range(samples):
        error = SET_POINT - measured
        if high and error < -eps:
            high = False
            switches.append(k)
        elif not high and error > eps:
            high = True
            switches.append(k)
        u = u0 + (h if high else -h)
        inputs.append(u)
        measured = plant.step(u)
    outputs = plant.outputs
    late = [s for s in switches if s >= samples // 2]
    if len(late) < 4:
        raise ValueError("the relay test found no limit cycle: raise samples or h")
    period = 2.0 * float(np.mean(np.diff(late)))
    tail = np.asarray(outputs[late[0] :])
    amplitude = float(np.ptp(tail) / 2.0)
    ku = 4.0 * h / (math.pi * math.sqrt(max(amplitude**2 - eps**2, 1e-12)))
    return RelayResult(ku, period, amplitude, plant.ultimate_gain(), list(outputs), inputs)


def ziegler_nichols(ku: float, pu: float) -> PIDGains:
    """Ziegler–Nichols PID gains from the ultimate gain and period (module docstring)."""
    kp = 0.6 * ku
    return PIDGains(kp, kp / (pu / 2.0), kp * pu / 8.0)


def tyreus_luyben(ku: float, pu: float) -> PIDGains:
    """Tyreus–Luyben PID gains from the ultimate gain and period: less aggressive than Z–N."""
    kp = ku / 2.2
    return PIDGains(kp, kp / (2.2 * pu), kp * pu / 6.3)


def closed_loop(
    params: Mapping[str, Any], gains: PIDGains, seed: int, episode: int, samples: int = 60
) -> list[float]:
    """The plant's output under a PID from rest, with its load step.

    The PID's output is limited to the plant's input range, and its integral
    is clamped by those limits (anti-windup), as a real loop would be.
    """
    plant = make_plant(params, seed, episode)
    p = plant.params
    pid = CognitivePID(gains.kp, gains.ki, gains.kd, output_limits=(p.u_min, p.u_max))
    measured = plant.measured
    for _ in range(samples):
        measured = plant.step(pid.update(SET_POINT - measured, 1.0))
    return list(plant.outputs)


def iae(outputs: Sequence[float]) -> float:
    """Integral of the absolute error, one sample = one second."""
    return float(sum(abs(SET_POINT - y) for y in outputs[1:]))


def score(
    params: Mapping[str, Any], gains: PIDGains, seed: int, episodes: int, samples: int = 60
) -> list[float]:
    """IAE of each episode (its own noise and load-step time)."""
    return [iae(closed_loop(params, gains, seed, i, samples)) for i in range(episodes)]


@dataclass(frozen=True)
class Contender:
    """One set of gains scored on the held-out seeds, with its margin over each other set."""

    name: str
    gains: PIDGains
    holdout_iae: float
    margin_over: dict[str, tuple[float, float, float]]  # other → (mean, lo, hi) of other − this


def tune_plant(
    params: Mapping[str, Any],
    baselines: Mapping[str, PIDGains],
    seed: int,
    trials: int,
    train_episodes: int = 30,
    holdout_episodes: int = 200,
    holdout_seed: int = HOLDOUT_SEED,
    on_trial: Callable[[int], None] | None = None,
) -> list[Contender]:
    """Tune PID gains on the plant with Optuna, then score every contender on held-out seeds.

    The search is TPE through ``experiment.tune.minimize`` on the training
    seeds, in log ranges around the first baseline's gains; the classic rules
    are its first trials.

    Args:
        params: The plant task's parameters.
        baselines: Named gains to compare against (e.g. Ziegler–Nichols, Tyreus–Luyben).
        seed: The training seed, also the sampler's and the bootstrap's.
        trials: How many gain sets Optuna scores, the baselines included.
        train_episodes: Episodes per trial on the training seeds.
        holdout_episodes: Episodes per contender on the held-out seeds.
        holdout_seed: The seed of the held-out episodes.
        on_trial: Called with each finished trial's number.

    Returns:
        The baselines and the tuned gains (named ``tuned``), each with its mean
        held-out IAE and paired bootstrap margins over the others.
    """
    ref = next(iter(baselines.values()))
    space = {
        "kp": ParamRange(low=ref.kp / 10, high=ref.kp * 3, log=True),
        "ki": ParamRange(low=max(ref.ki / 30, 1e-4), high=ref.ki * 5, log=True),
        "kd": ParamRange(low=max(ref.kd / 30, 1e-4), high=ref.kd * 5, log=True),
    }

    def objective(p: dict[str, float]) -> float:
        return float(
            np.mean(score(params, PIDGains(p["kp"], p["ki"], p["kd"]), seed, train_episodes))
        )

    study, _ = minimize(
        space,
        objective,
        trials,
        seed,
        enqueue=[g.as_dict() for g in baselines.values()],  # start from the classic rules
        on_trial=(lambda t, _p, _s: on_trial(t)) if on_trial is not None else None,
    )
    best = study.best_params
    everyone = {**baselines, "tuned": PIDGains(best["kp"], best["ki"], best["kd"])}
    held = {n: score(params, g, holdout_seed, holdout_episodes) for n, g in everyone.items()}
    out = []
    for name, gains in everyone.items():
        margins = {}
        for other in everyone:
            if other != name:
                lo, hi = paired_bootstrap(held[other], held[name], seed)
                margins[other] = (float(np.mean(held[other]) - np.mean(held[name])), lo, hi)
        out.append(Contender(name, gains, float(np.mean(held[name])), margins))
    return out


@dataclass(frozen=True)
class RelayBudget:
    """What the study may spend: Optuna trials and episodes per trial and per contender."""

    trials: int = 40  # gain sets scored by the tuner, the classic rules among them
    holdout: int = 200  # held-out episodes per contender
    train_episodes: int = 30  # training episodes per trial


@dataclass
class RelayStudy:
    """The relay test's measurement and every contender's gains and held-out IAE."""

    name: str  # the spec's name
    params: dict[str, Any]  # the plant's
    relay: RelayResult
    contenders: list[Contender]  # Ziegler–Nichols, Tyreus–Luyben, then the tuned gains
    holdout: int

    def to_dict(self) -> dict[str, Any]:
        """``relay.json``: the relay test (without its traces) and every contender."""
        return {
            "relay": {
                k: v for k, v in asdict(self.relay).items() if k not in ("outputs", "inputs")
            },
            "contenders": [asdict(c) for c in self.contenders],
        }

    def table(self) -> TextTable:
        """Each contender's gains and held-out IAE, with its margin over the tuned gains."""
        return contender_table(self.contenders, self.holdout)

    def gains_toml(self) -> str:
        """``gains.toml``: the best held-out gains as ``[controller.params]`` (``gains_toml``)."""
        return gains_toml(self.contenders)

    def responses(self) -> dict[str, list[float]]:
        """Each contender's closed loop from rest on the first held-out episode (the figure)."""
        return {c.name: closed_loop(self.params, c.gains, HOLDOUT_SEED, 0) for c in self.contenders}


def relay_line(result: RelayResult) -> str:
    """One line: the measured K_u beside the plant's true one, P_u and the amplitude."""
    return (
        f"relay test: K_u = {result.ultimate_gain:.3f} "
        f"(the plant's true K_u: {result.true_ultimate_gain:.3f}), "
        f"P_u = {result.ultimate_period:.2f} samples, amplitude {result.amplitude:.3f}"
    )


def require_plant(spec: ExperimentSpec, source: str | None = None) -> None:
    """Refuse a spec whose task is not ``plant``.

    Raises:
        SpecError: naming the spec (``source``, default its name) and its task.
    """
    if spec.task.name != "plant":
        raise SpecError(
            f"{source or spec.name}: the relay test needs task `plant`, not {spec.task.name!r}"
        )


def relay(
    spec: ExperimentSpec,
    budget: RelayBudget = RelayBudget(),
    executor: ExecutorConfig | None = None,
    *,
    source: str | None = None,
    note: Note = no_note,
    stage: Stage = no_stage,
) -> RelayStudy:
    """Relay-test the spec's plant, derive the classic gains and tune against them.

    The plant's episodes are single control loops, far cheaper than starting a worker,
    so they run serially in this process: ``executor`` is accepted for the common shape
    of a study and not used.

    Args:
        spec: A spec whose task is ``plant`` (its params; its seed trains the tuner).
        budget: Trials, held-out and training episodes.
        executor: Not used (see above).
        source: How an error names the spec (default: its name).
        note: Called with the relay test's line (``relay_line``) before the tuning.
        stage: Shows the tuning's progress, one unit per trial.

    Returns:
        The study.

    Raises:
        SpecError: for a task other than ``plant``, or a plant with no limit cycle.
    """
    del executor  # serial: see the docstring
    require_plant(spec, source)
    params = dict(spec.task.params)
    try:
        test = relay_test(params, spec.seed)
    except ValueError as exc:
        raise SpecError(f"{source or spec.name}: {exc}") from None
    baselines = {
        "ziegler_nichols": ziegler_nichols(test.ultimate_gain, test.ultimate_period),
        "tyreus_luyben": tyreus_luyben(test.ultimate_gain, test.ultimate_period),
    }
    note(relay_line(test))
    with stage("tuning trials", budget.trials) as advance:
        contenders = tune_plant(
            params,
            baselines,
            spec.seed,
            budget.trials,
            train_episodes=budget.train_episodes,
            holdout_episodes=budget.holdout,
            on_trial=lambda _t: advance(1),
        )
    return RelayStudy(spec.name, params, test, contenders, budget.holdout)


def contender_table(contenders: list[Contender], holdout: int) -> TextTable:
    """Each contender's gains and held-out IAE, with its margin over the tuned gains."""
    title = f"PID gains on the plant: IAE on {holdout} held-out episodes"
    columns = ["gains", "kp", "ki", "kd", "IAE", "IAE - tuned", "95% CI"]
    rows = []
    for c in contenders:
        margin = interval = ""
        if c.name != "tuned":
            mean, lo, hi = next(x for x in contenders if x.name == "tuned").margin_over[c.name]
            margin, interval = f"{mean:+.3f}", f"{lo:+.3f} to {hi:+.3f}"
        rows.append(
            [
                c.name,
                f"{c.gains.kp:.3f}",
                f"{c.gains.ki:.3f}",
                f"{c.gains.kd:.3f}",
                f"{c.holdout_iae:.3f}",
                margin,
                interval,
            ]
        )
    return TextTable(title, columns, rows, [], left=0, bold=False)


def gains_toml(contenders: list[Contender]) -> str:
    """Valid TOML: the best held-out gains as ``[controller.params]``, the others commented.

    One table can hold only one set of gains, so the contenders that scored
    worse are written as comments below it, each ready to uncomment instead.
    """
    ranked = sorted(contenders, key=lambda c: c.holdout_iae)
    lines = ["# PID gains from `opar-sim relay`, best held-out IAE first (lower is better)"]
    for i, c in enumerate(ranked):
        prefix = "" if i == 0 else "# "
        lines.append("")
        lines.append(f"# {c.name}: held-out IAE {c.holdout_iae:.3f}")
        lines.append(f"{prefix}[controller.params]")
        lines += [f"{prefix}{k} = {v:.6g}" for k, v in c.gains.as_dict().items()]
    return "\n".join(lines) + "\n"
