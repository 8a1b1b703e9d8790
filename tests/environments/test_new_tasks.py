"""research_qa and plant: the behaviours their docstrings promise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

import environments
from opar_sim.core.types import Action

QUIET = {"tools": {"failure_rate": 0.0, "latency_sigma": 0.0}}


def fresh(name, seed=0, **params):
    task = environments.make(name, **(QUIET | params))
    task.reset(simpy.Environment(), np.random.default_rng(seed), np.random.default_rng(seed))
    return task


def run_tool(task, action):
    proc = task.env.process(task.execute(action))
    task.env.run(until=proc)
    return proc.value


@pytest.mark.parametrize("name", environments.names())
def test_docstring_has_the_fixed_sections(name):
    doc = type(environments.make(name)).__module__
    text = __import__(doc, fromlist=["x"]).__doc__
    for section in ("Goal", "Tools", "Observation", "Progress", "Termination", "Faults"):
        assert f"\n{section}\n" in text, section
    assert "\nVersion history\n" in text


def test_the_same_search_twice_gives_the_same_results():
    task = fresh("research_qa")
    first = run_tool(task, Action.of("search", query="pacer"))
    again = run_tool(task, Action.of("search", query="pacer"))
    other = run_tool(task, Action.of("search", query="pacer 2"))
    assert first.text.split(": ", 1)[1] == again.text.split(": ", 1)[1]
    assert other.text.split(": ", 1)[1] != first.text.split(": ", 1)[1]


def test_answering_with_facts_missing_is_not_completion():
    task = fresh("research_qa")
    run_tool(task, Action.of("answer"))
    assert not task.complete and task.progress == 0.0
    assert Action.of("answer") in task.wrong_actions()


def test_a_contradicting_document_cancels_a_fact():
    task = fresh("research_qa", contradiction_rate=0.9, n_docs=60)
    topic = 0
    run_tool(task, Action.of("search", query=task.topics[topic]))
    for n in range(2, 12):
        run_tool(task, Action.of("search", query=f"{task.topics[topic]} {n}"))
    support = next(i for i in task.rank if task.docs[i].topic == topic and task.docs[i].supports)
    contra = next(i for i in task.rank if task.docs[i].topic == topic and not task.docs[i].supports)
    run_tool(task, Action.of("fetch", doc=support))
    assert task.progress == pytest.approx(0.9 / len(task.topics))
    run_tool(task, Action.of("fetch", doc=contra))
    assert task.progress == 0.0
    assert "conflict" in task.observe().text


def test_the_expert_answers_right():
    task = fresh("research_qa")
    for _ in range(40):
        run_tool(task, task.expert_action())
        if task.complete:
            break
    assert task.complete and task.progress == 1.0


def test_fetch_needs_a_search_first():
    assert run_tool(fresh("research_qa"), Action.of("fetch", doc=0)).error == "rejected"


CLEAN_PLANT = {"noise": 0.0, "disturbance": 0.0}


def test_plant_open_loop_step_response_follows_the_equation():
    task = fresh("plant", **CLEAN_PLANT, dead_time=2, tau=3.0, gain=1.0)
    a = math.exp(-1 / 3.0)
    for _ in range(10):
        run_tool(task, Action.of("actuate", u=1.0))
    expected = [0.0] + [0.0 if k <= 2 else 1.0 - a ** (k - 2) for k in range(1, 11)]
    assert task.outputs == pytest.approx(expected)


def test_plant_deadbeat_expert_reaches_the_set_point_after_the_dead_time():
    task = fresh("plant", **CLEAN_PLANT, dead_time=2, u_max=100.0, u_min=-100.0)
    for _ in range(3):
        run_tool(task, task.expert_action())
    assert task.y == pytest.approx(1.0) and task.complete


def test_plant_load_step_knocks_it_off_and_the_expert_recovers():
    task = fresh("plant", noise=0.0, disturbance=-0.5, disturbance_window=(6, 6))
    for _ in range(6):
        run_tool(task, task.expert_action())
    assert not task.complete  # the step hit at sample 6
    for _ in range(8):
        run_tool(task, task.expert_action())
    assert task.complete


def test_plant_ultimate_gain_without_dead_time_is_analytic():
    task = environments.make("plant", dead_time=0)
    assert task.ultimate_gain() == pytest.approx((1 + task.a) / task.b, rel=1e-5)


def test_plant_proportional_loop_oscillates_at_the_ultimate_gain():
    task = fresh("plant", **CLEAN_PLANT, u_max=100.0, u_min=-100.0)
    ku = task.ultimate_gain()
    for gain, grows in ((0.9 * ku, False), (1.1 * ku, True)):
        task = fresh("plant", **CLEAN_PLANT, u_max=100.0, u_min=-100.0)
        for _ in range(200):
            run_tool(task, Action.of("actuate", u=gain * (1.0 - task.y)))
        swing = np.ptp(task.outputs[-20:])
        assert bool(swing > 1.0) == grows


def test_a_relay_test_on_the_plant_estimates_its_ultimate_gain():
    """Åström–Hägglund: a relay of amplitude h gives a limit cycle of amplitude A; K_u ≈ 4h/(πA)."""
    task = fresh("plant", **CLEAN_PLANT, dead_time=2)
    h = 0.5
    for _ in range(300):
        run_tool(task, Action.of("actuate", u=1.0 + h * float(np.sign(1.0 - task.y))))
    cycle = np.asarray(task.outputs[-120:])
    amplitude = np.ptp(cycle) / 2
    assert 4 * h / (math.pi * amplitude) == pytest.approx(task.ultimate_gain(), rel=0.2)
