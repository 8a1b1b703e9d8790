"""The batch engine against the SimPy engine: the same distributions, per task and law.

The two engines draw from different streams, so they agree in distribution,
not episode by episode (``test_batch_exact.py`` drives both from one recorded
draw stream and checks every decision).  For each twin's shipped specs and each
law: success rate, mean steps, mean tokens and mean REPLANs of the two engines
must agree within a two-sample bound of ``Z`` standard errors,
sqrt(s1²/n1 + s2²/n2) with each engine's own sample variance (a Welch-style bound).

The default suite runs ``SIMPY_EPISODES`` SimPy episodes (2,000) against 10 times
as many batch ones with Z = 4, on every law for ``flight_booking`` and on
``DEFAULT_LAWS`` for the other twins' specs.  ``OPAR_SIM_BATCH_FULL=1`` runs the
issue's full grid: every law on every twin's specs, 10,000 SimPy against 100,000
batch episodes, with |z| ≤ 3 (``OPAR_SIM_BATCH_EPISODES`` sets the SimPy count;
the figures in docs/batch.md come from ``benchmarks/equivalence.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.engines.batch import check_batch, run_batch
from opar_sim.spec.build import build, load_spec
from opar_sim.spec.edit import with_overrides
from opar_sim.spec.schema import SpecError

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "experiments" / "flight_booking.toml"
FULL = os.environ.get("OPAR_SIM_BATCH_FULL", "") not in ("", "0")
SIMPY_EPISODES = int(os.environ.get("OPAR_SIM_BATCH_EPISODES", "10000" if FULL else "2000"))
BATCH_EPISODES = 10 * SIMPY_EPISODES
Z = 3.0 if FULL else 4.0
CONTROLLERS = (
    "pid",
    "threshold",
    "stall_counter",
    "fixed_interval",
    "bang_bang",
    "open_loop",
    "confidence",
    "sprt",
    "oracle",
    "bayes",  # no array twin: its scalar law, row by row (controllers.batch.ScalarRows)
)
METRICS = ("success", "steps", "tokens", "replans")
# the other twins' shipped specs (a spec of trials runs one trial: trials are not modelled)
TWIN_SPECS = (
    "research_qa_faults.toml",
    "detectors_research_qa.toml",
    "weather.toml",
    "tau_airline_model.toml",
)
DEFAULT_LAWS = ("pid", "threshold", "oracle")
GRID = [
    (name, law)
    for name in TWIN_SPECS
    for law in (CONTROLLERS if FULL else DEFAULT_LAWS)
    if law != "bayes"  # the Bayes law models flight_booking only
]


def simpy_metrics(
    controller: str, episodes: int, confirm: int | None = None, path: Path = SPEC, first: int = 0
) -> dict[str, np.ndarray]:
    """Per-episode success, steps, tokens and REPLANs of the SimPy engine (from ``first`` on)."""
    spec = with_overrides(load_spec(path), controller=controller, confirm=confirm, trials=1)
    parts = build(spec)
    task, agent = parts.make_task(), parts.make_agent()
    law = parts.controllers[0][1]()
    supervisor = parts.make_supervisor()
    rows = []
    for i in range(first, first + episodes):
        seed = episode_seed(spec.seed, i)
        r = run_episode(task, agent, law, parts.limits, seed, episode=i, supervisor=supervisor)
        rows.append((r.success, len(r.steps), r.cost.tokens, r.cost.replans))
    values = np.array(rows, float)
    return {name: values[:, k] for k, name in enumerate(METRICS)}


def batch_metrics(
    controller: str, episodes: int, confirm: int | None = None, path: Path = SPEC
) -> dict[str, np.ndarray]:
    """The same per-episode metrics from the batch engine."""
    spec = with_overrides(load_spec(path), controller=controller, confirm=confirm, trials=1)
    r = run_batch(spec, 0, 0, episodes)
    return {
        "success": r.success.astype(float),
        "steps": r.steps.astype(float),
        "tokens": r.tokens.astype(float),
        "replans": r.replans.astype(float),
    }


def differences(
    a: dict[str, np.ndarray], b: dict[str, np.ndarray]
) -> dict[str, tuple[float, float, float, float]]:
    """Per metric: (mean a, mean b, b − a, the two-sample standard error)."""
    out = {}
    for name in METRICS:
        x, y = a[name], b[name]
        se = float(np.sqrt(x.var(ddof=1) / len(x) + y.var(ddof=1) / len(y)))
        out[name] = (float(x.mean()), float(y.mean()), float(y.mean() - x.mean()), se)
    return out


@pytest.mark.parametrize("controller", CONTROLLERS)
def test_batch_engine_matches_simpy(controller: str) -> None:
    found = differences(
        simpy_metrics(controller, SIMPY_EPISODES), batch_metrics(controller, BATCH_EPISODES)
    )
    for name, (simpy_mean, batch_mean, diff, se) in found.items():
        assert se > 0 or diff == 0
        assert abs(diff) <= Z * se, (
            f"{controller} {name}: simpy {simpy_mean:.4g}, batch {batch_mean:.4g}, "
            f"difference {diff:.4g} > {Z} × {se:.3g}"
        )


@pytest.mark.parametrize(("name", "controller"), GRID)
def test_every_twin_matches_simpy(name: str, controller: str) -> None:
    path = ROOT / "experiments" / name
    simpy = simpy_metrics(controller, SIMPY_EPISODES, path=path)
    batch = batch_metrics(controller, BATCH_EPISODES, path=path)
    for metric, (simpy_mean, batch_mean, diff, se) in differences(simpy, batch).items():
        assert se > 0 or diff == 0
        assert abs(diff) <= Z * se, (
            f"{name} {controller} {metric}: simpy {simpy_mean:.4g}, batch {batch_mean:.4g}, "
            f"difference {diff:.4g} > {Z} × {se:.3g}"
        )


@pytest.mark.parametrize("controller", ["threshold", "sprt", "bang_bang"])
def test_the_stop_confirmation_matches_simpy(controller: str) -> None:
    """``[guards] confirm = 3``, the shared stop confirmation, in both engines."""
    simpy = simpy_metrics(controller, SIMPY_EPISODES // 2, confirm=3)
    batch = batch_metrics(controller, BATCH_EPISODES // 2, confirm=3)
    for name, (simpy_mean, batch_mean, diff, se) in differences(simpy, batch).items():
        assert abs(diff) <= Z * se, (
            f"{controller} confirm=3 {name}: simpy {simpy_mean:.4g}, batch {batch_mean:.4g}, "
            f"difference {diff:.4g} > {Z} × {se:.3g}"
        )
    # and the confirmation changes what the law does: the bound tells k = 3 from k = 1
    plain = batch_metrics(controller, BATCH_EPISODES // 2)
    steps = differences(plain, batch)["steps"]
    assert steps[2] > Z * steps[3]  # held claims: longer episodes


def test_bound_detects_a_different_law() -> None:
    """The bound can fail: a PID with another threshold is told apart from the default."""
    base = batch_metrics("pid", 5000)
    spec = with_overrides(load_spec(SPEC), controller="pid")
    spec = spec.model_copy(
        update={
            "controller": spec.controller.model_copy(update={"params": {"replan_threshold": 0.6}})
        }
    )
    r = run_batch(spec, 0, 0, 5000)
    replans = differences(base, {**base, "replans": r.replans.astype(float)})["replans"]
    assert abs(replans[2]) > Z * replans[3]


def test_the_batch_engine_refuses_what_it_does_not_model() -> None:
    check_batch(with_overrides(load_spec(SPEC), controller="bayes"))  # row by row
    guarded = with_overrides(load_spec(SPEC), controller="pid", confirm=2)
    check_batch(guarded)  # the stop confirmation is modelled
    other_guard = guarded.model_copy(
        update={"guards": guarded.guards.model_copy(update={"no_improvement": 3})}
    )
    with pytest.raises(SpecError, match=r"other than confirm are not modelled \(no_improvement\)"):
        check_batch(other_guard)
    check_batch(load_spec(ROOT / "experiments" / "research_qa_faults.toml"))
    wrapped = load_spec(ROOT / "experiments" / "research_qa_faults.toml")
    wrapped = wrapped.model_copy(
        update={
            "task": wrapped.task.model_copy(
                update={"wrappers": [*wrapped.task.wrappers, {"name": "parallel"}]}
            )
        }
    )
    with pytest.raises(
        SpecError,
        match=r"^--engine batch: research_qa's twin does not model the wrapper 'parallel' "
        r"\(it models delay, noise, latency, disturbance\) \(use the SimPy engine\)$",
    ):
        check_batch(wrapped)


def test_batch_runs_are_reproducible() -> None:
    spec = with_overrides(load_spec(SPEC), controller="pid")
    a, b = run_batch(spec, 0, 0, 300), run_batch(spec, 0, 0, 300)
    assert a.tokens.tolist() == b.tokens.tolist()
    assert a.outcomes() == b.outcomes()


def test_run_and_sweep_take_engine_batch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--engine batch`` writes the ordinary run files; a sweep gets one run per point."""
    from opar_sim.cli.main import main
    from opar_sim.rundir import iter_episodes, read_json

    out = tmp_path / "run"
    assert (
        main(["run", str(SPEC), "--engine", "batch", "--episodes", "200", "--out", str(out)]) == 0
    )
    rows = list(iter_episodes(out))
    assert [r["episode"] for r in rows] == list(range(200))
    summary = read_json(out / "summary.json")
    assert summary["pid"]["episodes"] == 200
    assert summary["pid"]["success_rate"] == sum(r["success"] for r in rows) / 200
    sweep = tmp_path / "sweep"
    args = ["sweep", str(ROOT / "experiments" / "pid_gain_map.toml"), "--engine", "batch"]
    assert main([*args, "--episodes", "20", "--out", str(sweep)]) == 0
    points = read_json(sweep / "sweep_summary.json")
    assert len(points) == 25 and all(p["summary"]["pid"]["episodes"] == 20 for p in points)
    # a law without an array twin runs through its scalar law, row by row
    rows_out = tmp_path / "bayes"
    args = ["run", str(SPEC), "--engine", "batch", "--controller", "bayes"]
    assert main([*args, "--episodes", "50", "--out", str(rows_out)]) == 0
    assert read_json(rows_out / "summary.json")["bayes"]["episodes"] == 50
    bad = ["run", str(SPEC), "--engine", "batch", "--trials", "2", "--out", str(tmp_path / "x")]
    assert main(bad) == 2
    assert "not modelled" in capsys.readouterr().err


def test_run_refuses_engine_batch_before_any_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A task without a vectorised model: exit 2, one line, no progress bar, nothing written."""
    from opar_sim.cli.main import main

    out = tmp_path / "x"
    from opar_sim.core.twin import TWINS

    spec = ROOT / "experiments" / "team.toml"
    assert main(["run", str(spec), "--engine", "batch", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    twins = ", ".join(repr(name) for name in sorted(TWINS))
    assert "'flight_booking'" in twins
    assert captured.err.strip().splitlines() == [
        "opar-sim: error: --engine batch: no vectorised model of task 'team' "
        f"(twins: {twins}) (use the SimPy engine)"
    ]
    assert not out.exists()


RUNS = {
    "compare_flight_booking",
    "controller_shootout",
    "detectors_research_qa",
    "flight_booking",
    "flight_booking_controllers",
    "flight_booking_infeasible",
    "flight_booking_no_replan",
    "pid_gain_map",
    "reflect_vs_open_loop",
    "research_qa_faults",
    "tune_pid",
    "weather",
}
TWINS_NAMED = "'flight_booking', 'research_qa', 'tool_chain', 'weather'"
REFUSED = {
    "context_rebound": "memory compression (context_max) is not modelled",
    "flight_booking_guarded": "[guards] other than confirm are not modelled "
    "(token_spike, repeat, human)",
    "flight_booking_llamacpp": "agent kind 'llm' (only the simulated agent)",
    "flight_booking_ollama": "agent kind 'llm' (only the simulated agent)",
    "tau_smollm2_flight_booking": "agent kind 'llm' (only the simulated agent)",
    "flight_booking_trials": "trials and Reflexion attempts are not modelled",
    "reflexion": "trials and Reflexion attempts are not modelled",
    "tau_airline_model": "trials and Reflexion attempts are not modelled",
    "tau_airline_model_v1": "trials and Reflexion attempts are not modelled",
    "guardrails": "guardrails are not modelled",
    "plant_relay": f"no vectorised model of task 'plant' (twins: {TWINS_NAMED})",
    "team": f"no vectorised model of task 'team' (twins: {TWINS_NAMED})",
}


@pytest.mark.parametrize(
    "path", sorted((ROOT / "experiments").glob("*.toml")), ids=lambda p: p.stem
)
def test_every_shipped_spec_runs_on_the_batch_engine_or_is_refused_in_one_line(
    path: Path,
) -> None:
    """A spec a twin covers runs (each of its laws, a few episodes); the rest name what lacks."""
    from opar_sim.engines.batch import batch_unsupported

    assert path.stem in RUNS | set(REFUSED), f"a new spec: list it in RUNS or REFUSED ({path})"
    spec = load_spec(path)
    if path.stem in REFUSED:
        assert batch_unsupported(spec) == REFUSED[path.stem]
        with pytest.raises(SpecError, match=r"^--engine batch: .* \(use the SimPy engine\)$"):
            check_batch(spec)
        return
    check_batch(spec)
    for k in range(len(spec.controller_list())):
        result = run_batch(spec, k, 0, 20)
        assert len(result.outcomes()) == 20 and len(result.answers()) == 20
        assert (result.steps >= 1).all()
