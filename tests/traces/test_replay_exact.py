"""Replay is exact: every checkable verdict agrees with the real run of the replayed law.

Every shipped controller runs on the same 40 flight bookings (one spec with a
``[[compare]]`` of all of them, seed 7: common random numbers, so episode n is
the same seeded world for every law).  Then each ordered pair (A recorded, B
replayed) replays A's record under B and checks each verdict against B's own
episode n:

- ``same`` ⇒ B's real episode has A's outcome and A's number of steps;
- ``stop`` at step s ⇒ B's real episode TERMINATEd at step s (s steps) with the
  replay's outcome.

Why this must hold: the world, the tools and the agent draw from per-episode
streams that only the decisions steer, and a controller's own state is a
function of what it was fed; while B makes A's decisions, B's real run sees
exactly A's evaluations and contexts, so B's state at the divergence equals its
state in its own run (the spec has no convergence guards, whose review would
sit between the decision and the record, and no Reflexion retries).

``replan`` and ``continue`` verdicts diverge into a trajectory neither record
holds, so their outcome is unknown by construction: they are counted, not
checked.  The oracle reads the hidden state; replayed, it is fed the recorded
truth (progress, completion, feasibility, plan quality) through its probe.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import controllers
from opar_sim.core.controller import ReflectContext
from opar_sim.core.loop import run_episode
from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import ControlSignal, Decision, Evaluation
from opar_sim.rundir import episode_key
from opar_sim.running.runner import run_experiment
from opar_sim.spec.build import build, load_spec
from opar_sim.traces.recorded import load_run
from opar_sim.traces.replay import CHECKABLE, replay, replay_episode
from tests.conftest import EXPERIMENTS

EPISODES = 40
SEED = 7
TERMINATED = ("success", "premature", "gave_up", "abandoned")  # outcomes of a TERMINATE


# the shipped flight booking; and a harsher one: 30 % of the worlds have no valid flight
# (the oracle and stall_counter give up), the agent is over-confident (confidence stops
# early) and emits invalid output at times (three in a row end an episode whatever the
# controller says), and 10 steps (the last step's CONTINUE or REPLAN changes nothing)
WORLDS = {"flight_booking": False, "harsh": True}
HARSH_TASK = "infeasible_rate = 0.3\n"
HARSH_AGENT = "[agent.params]\nbias = 0.2\ninvalid_format_rate = 0.3\n"


@pytest.fixture(scope="module", params=sorted(WORLDS))
def record(request, tmp_path_factory):
    """Every shipped controller, at its defaults, on the same seeded flight bookings."""
    base = (EXPERIMENTS / "flight_booking.toml").read_text()
    head, _, tail = base.partition("[controller]")
    limits = tail[tail.index("[limits]") :]
    compares = "".join(f'[[compare]]\nname = "{name}"\n\n' for name in controllers.names())
    text = head.replace("episodes = 300", f"episodes = {EPISODES}").replace(
        "seed = 0", f"seed = {SEED}"
    )
    if WORLDS[request.param]:
        text = text.replace("[task.params]\n", "[task.params]\n" + HARSH_TASK)
        text = text.replace('kind = "simulated"\n', 'kind = "simulated"\n' + HARSH_AGENT)
        limits = limits.replace("max_steps = 20", "max_steps = 10")
    spec_file = tmp_path_factory.mktemp("spec") / "all.toml"
    spec_file.write_text(text + compares + limits)
    spec = load_spec(spec_file)
    assert [c.name for c in spec.controller_list()] == controllers.names()
    assert not spec.guards.enabled() and spec.reflexion.attempts == 1
    out = tmp_path_factory.mktemp("runs") / "all"
    run_experiment(spec, Path(out))
    return load_run(out)


def _episodes_of(run, name):
    return {int(e["episode"]): e for e in run.episodes if e["controller"] == name}


def _check(run):
    """Verdict counts per (recorded, replayed) pair, and the wrong verdicts found."""
    matrix: dict[tuple[str, str], Counter[str]] = {}
    wrong: list[str] = []
    names = controllers.names()
    for a in names:
        recorded = type(run)(run.path, run.spec, list(_episodes_of(run, a).values()), run.steps)
        for b in names:
            real = _episodes_of(run, b)
            replayed = replay(recorded, lambda b=b: controllers.make(b))
            matrix[(a, b)] = Counter(r.verdict for r in replayed)
            for r in replayed:
                own = real[r.episode]
                if r.verdict == "same":
                    ok = own["outcome"] == r.recorded_outcome and own["steps"] == r.recorded_steps
                elif r.verdict == "stop":
                    ok = own["steps"] == r.at_step and own["outcome"] == r.outcome
                    ok = ok and r.outcome in TERMINATED
                else:
                    continue
                if not ok:
                    wrong.append(
                        f"{a}->{b} episode {r.episode}: {r.verdict} at {r.at_step} "
                        f"({r.outcome}, {r.recorded_steps} recorded steps) but {b} ran "
                        f"{own['steps']} steps to {own['outcome']}"
                    )
    return matrix, wrong


def test_every_checkable_verdict_matches_the_real_run(record):
    matrix, wrong = _check(record)
    assert wrong == []
    checked = sum(n for c in matrix.values() for v, n in c.items() if v in CHECKABLE)
    uncheckable = sum(n for c in matrix.values() for v, n in c.items() if v not in CHECKABLE)
    names = controllers.names()
    assert checked + uncheckable == EPISODES * len(names) ** 2
    # a law replayed on its own record makes every recorded decision again
    for name in names:
        assert matrix[(name, name)] == Counter(same=EPISODES)
    # the check has teeth: most pairs of distinct laws disagree somewhere, and stops are checked
    assert sum(c["stop"] for c in matrix.values()) > 100
    print_matrix(matrix, checked, uncheckable)


def print_matrix(matrix, checked, uncheckable):
    """The verdict counts (same/stop/replan/continue) per pair, shown with ``pytest -s``."""
    names = controllers.names()
    print(f"\nchecked {checked}, uncheckable {uncheckable}")
    print("recorded \\ replayed: " + " | ".join(names))
    for a in names:
        cells = []
        for b in names:
            c = matrix[(a, b)]
            cells.append(f"{c['same']}/{c['stop']}/{c['replan']}/{c['continue']}")
        print(f"{a}: " + " | ".join(cells))


class Scripted:
    """Makes the decisions it is given, one a step: departs from a record where told."""

    name = "scripted"

    def __init__(self, signals: list[str]) -> None:
        self.signals = signals

    def reset(self) -> None:
        """Stateless."""

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """The scripted signal of this step."""
        return Decision(ControlSignal(self.signals[ctx.step - 1]), "scripted", {})


def test_a_last_step_the_loop_ends_anyway_is_replayed_as_the_record(record):
    """Three invalid outputs in a row, or the last allowed step, end the episode there.

    Replaying a record whose last decision alone is changed must then say ``same``
    (or ``stop`` for a TERMINATE on the last allowed step), and the real run of that
    changed law on the same seed agrees; the unchanged script reproduces the record.
    """
    parts = build(record.spec)
    grouped = record.episode_steps()
    endings = ("truncated:max_steps", "error:invalid_format")
    checked = Counter()
    for episode in record.episodes:
        if episode["outcome"] not in endings or int(episode["attempt"] or 1) != 1:
            continue
        rows = grouped[episode_key(episode)]
        signals = [str(r["signal"]) for r in rows]
        for last in ("continue", "replan", "terminate"):
            script = [*signals[:-1], last]
            real = run_episode(
                parts.make_task(),
                parts.make_agent(),
                Scripted(script),
                parts.limits,
                episode_seed(record.spec.seed, int(episode["episode"])),
                episode=int(episode["episode"]),
            )
            if last == signals[-1]:
                assert (real.outcome, len(real.steps)) == (episode["outcome"], len(rows))
                continue
            r = replay_episode(rows, episode, Scripted(script))
            assert r.verdict in CHECKABLE, (episode["outcome"], last, r)
            if r.verdict == "same":
                assert (real.outcome, len(real.steps)) == (episode["outcome"], len(rows))
            else:
                assert (real.outcome, len(real.steps)) == (r.outcome, r.at_step)
            checked[(episode["outcome"], r.verdict)] += 1
    if record.spec.limits.max_steps == 10:  # the harsh world has both endings
        assert checked[("truncated:max_steps", "same")] > 20
        assert checked[("truncated:max_steps", "stop")] > 10
        assert checked[("error:invalid_format", "same")] >= 2
