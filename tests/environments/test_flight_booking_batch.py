"""The vectorised flight_booking against the scalar task, world by world, action by action.

Each row of a ``FlightBookingBatch`` is copied into a scalar ``FlightBooking``;
both then take the same actions (the scalar expert's or one of its wrong
moves, at random) and the same fare rises.  After every action the tool's
``ok`` and result tokens, the hidden progress, ``complete``, the agent's
visible progress, the fare-change flag, the best flight and the expert's
next action must be equal on every row: the cached state of the batch model
(validity, shown count, cheapest seen flight, best flight) is checked
against the scalar task's recomputation.  The twin's own draws (its worlds and
its fare rises) are compared with the scalar task's in distribution.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simpy
from scipy import stats

from environments import flight_booking_batch as fb
from environments import flight_booking_kernels as fk
from environments.flight_booking import Flight, FlightBooking, FlightBookingParams
from opar_sim.core.types import Action

N, STEPS = 150, 30


def scalar_copy(world: fb.FlightBookingBatch, i: int) -> FlightBooking:
    """Row ``i`` of the batch world as a scalar task (no SimPy process: rises come by hand)."""
    task = FlightBooking()
    task.flights = [
        Flight(j, float(world.price[i, j]), int(world.hour[i, j]), int(world.points_cost[i, j]))
        for j in range(world.params.n_flights)
    ]
    task.week_empty = bool(world.week_empty[i])
    task.balance = int(world.balance[i])
    best = task._best_valid()
    task._best = best.flight_id if best else None
    return task


def encode(action: Action, p: FlightBookingParams) -> tuple[int, int, int]:
    """The batch codes (tool, flight, payment) of a scalar action."""
    args = dict(action.args)
    if action.tool == "search_flights":
        return (fk.SEARCH_WEEK if args["range"] == "next_week" else fk.SEARCH_WIDE), -1, 0
    if action.tool == "filter_flights":
        strict = args["max_price"] == p.max_price and args["earliest_hour"] == p.earliest_hour
        return (fk.FILTER if strict else fk.FILTER_LOOSE), -1, 0
    if action.tool == "book_flight":
        pay = fk.PAY_POINTS if args["payment"] == "points" else fk.PAY_CASH
        return fk.BOOK, int(args["flight_id"]), pay
    codes = {
        "next_page": fk.NEXT_PAGE,
        "check_points": fk.CHECK_POINTS,
        "cancel_booking": fk.CANCEL,
        "get_itinerary": fk.ITINERARY,
    }
    return codes[action.tool], -1, 0


def test_batch_world_matches_the_scalar_task_action_by_action() -> None:
    params = FlightBookingParams(infeasible_rate=0.2, empty_rate=0.3)
    rng = np.random.default_rng(11)
    world = fb.FlightBookingBatch(params)
    world.reset(N, rng)
    world.next_rise[:] = np.inf  # rises only when the test asks
    tasks = [scalar_copy(world, i) for i in range(N)]
    assert world.best.tolist() == [-1 if t._best is None else t._best for t in tasks]
    seen_tools = set()
    for step in range(STEPS):
        # a fare rise in a third of the rows, mirrored into the scalar tasks
        risen = rng.random(N) < 0.33
        before = world.price.copy()
        world.next_rise[risen] = 0.0
        world.sync(np.zeros(N), risen, rng)
        world.next_rise[:] = np.inf
        for i, j in zip(*np.nonzero(world.price != before), strict=True):
            tasks[i].flights[j].price = float(world.price[i, j])
            best = tasks[i]._best_valid()
            tasks[i]._best = best.flight_id if best else None
            tasks[i]._cache = None
        # the expert's next action, then one action per row (expert or a wrong move)
        tool, flight, pay = world.expert()
        chosen = []
        for i, task in enumerate(tasks):
            expert = task.expert_action()
            code = encode(expert, params)
            assert int(tool[i]) == code[0], (step, i, expert)
            if code[0] == fk.BOOK:
                assert (int(flight[i]), int(pay[i])) == code[1:], (step, i, expert)
            wrong = task.wrong_actions()
            pick = expert if rng.random() < 0.5 else wrong[int(rng.integers(len(wrong)))]
            chosen.append(pick)
        codes = np.array([encode(a, params) for a in chosen])
        seen_tools.update(codes[:, 0].tolist())
        action = (codes[:, 0].astype(np.int8), codes[:, 1], codes[:, 2].astype(np.int8))
        ok, tokens = world.apply(np.ones(N, bool), action)
        visible = world.visible_progress()
        progress = world.progress()
        complete = world.complete()
        for i, (task, action) in enumerate(zip(tasks, chosen, strict=True)):
            result = task._apply(action)
            where = (step, i, action)
            assert bool(ok[i]) == result.ok and int(tokens[i]) == result.tokens, where
            assert progress[i] == task.progress and bool(complete[i]) == task.complete, where
            assert visible[i] == task.observe().visible_progress, where
            assert bool(world.fare_changed_seen[i]) == task.fare_changed_seen, where
            assert int(world.best[i]) == (-1 if task._best is None else task._best), where
    assert seen_tools == set(range(9))  # every tool, the loose filter included, was checked


# -- the twin's own draws ------------------------------------------------------------------
# The engines' exactness test (tests/engines/test_batch_exact.py) copies the scalar worlds and
# replays the scalar fare rises into the twin, so the twin's own draws of both (``reset`` and
# ``sync``) are checked here, in distribution: 20,000 scalar worlds, their fares rising in a
# SimPy environment, against 200,000 of the twin's, rising through ``sync`` called every 10
# simulated seconds as the engine calls it.  Fixed seeds; each two-sample test must give
# p >= 1e-5 (the smallest of today's nine is 0.08).  Each of these changes to the twin fails it:
# the rise rate at 11/12 of its value, the rise factor's range to 1.55, one rise per ``sync``,
# the last flight never rising, departure hours to 23, the balance's factor to 1.65.
SCALAR_WORLDS, TWIN_WORLDS, HORIZON, P_MIN = 20_000, 200_000, 50.0, 1e-5
RISES = FlightBookingParams(fare_change_rate=0.01)  # 0.12 rises a second a world: 6 by HORIZON


def _features(*arrays: np.ndarray) -> dict[str, np.ndarray]:
    """What the two samples are compared on, from each world's fares before and after the rises.

    The arrays: fares before and after, departure hours, validity before and after, the best
    flight before and after, the balance, the points costs and the empty-week flags.
    """
    price0, price, hour, valid0, valid, best0, best, balance, cost, empty = arrays
    rows = np.arange(len(best))
    has = best0 >= 0
    return {
        "valid flights": valid0.sum(1),
        "valid flights after the rises": valid.sum(1),
        "flights whose fare rose": (price != price0).sum(1),
        "best fare": price0[rows, np.maximum(best0, 0)][has],
        "best fare after the rises": price[rows, np.maximum(best, 0)][best >= 0],
        "risen fare / fare": (price / price0)[price != price0],
        "balance / points of the best": (balance / cost[rows, np.maximum(best0, 0)])[has],
        "empty week": empty.astype(float),
        "departure hour": hour.ravel().astype(float),
    }


def _scalar_sample(rng: np.random.Generator) -> dict[str, np.ndarray]:
    task = FlightBooking(**RISES.model_dump())
    cols: dict[str, list[Any]] = {k: [] for k in ("p0", "p", "h", "c", "e", "b")}
    best0, best = [], []
    for child in rng.spawn(SCALAR_WORLDS):
        env = simpy.Environment()
        task.reset(env, child, child)
        cols["p0"].append([f.price for f in task.flights])
        best0.append(-1 if task._best is None else task._best)
        env.run(until=HORIZON)
        cols["p"].append([f.price for f in task.flights])
        cols["h"].append([f.hour for f in task.flights])
        cols["c"].append([f.points_cost for f in task.flights])
        cols["e"].append(task.week_empty)
        cols["b"].append(task.balance)
        best.append(-1 if task._best is None else task._best)
    p0, p, h = (np.array(cols[k], float) for k in ("p0", "p", "h"))
    top, early = RISES.max_price, RISES.earliest_hour
    return _features(
        p0,
        p,
        h,
        (p0 <= top) & (h >= early),
        (p <= top) & (h >= early),
        np.array(best0),
        np.array(best),
        np.array(cols["b"], float),
        np.array(cols["c"], float),
        np.array(cols["e"]),
    )


def _twin_sample(rng: np.random.Generator) -> dict[str, np.ndarray]:
    world = fb.FlightBookingBatch(RISES)
    world.reset(TWIN_WORLDS, rng)
    p0, valid0, best0 = world.price.astype(float), world.valid.copy(), world.best.copy()
    every = np.ones(TWIN_WORLDS, bool)
    for now in np.arange(10.0, HORIZON + 1.0, 10.0):
        world.sync(np.full(TWIN_WORLDS, now), every, rng)
    return _features(
        p0,
        world.price.astype(float),
        world.hour,
        valid0,
        world.valid,
        best0,
        world.best,
        world.balance.astype(float),
        world.points_cost.astype(float),
        world.week_empty,
    )


def test_the_twins_worlds_and_fare_rises_match_the_scalar_task_in_distribution() -> None:
    scalar = _scalar_sample(np.random.default_rng(21))
    twin = _twin_sample(np.random.default_rng(22))
    assert np.mean(scalar["flights whose fare rose"]) > 3  # the rises ran in both
    for name, x in scalar.items():
        y = twin[name]
        if name in ("valid flights", "valid flights after the rises", "flights whose fare rose"):
            top = int(max(x.max(), y.max())) + 1
            counts = np.vstack([np.bincount(x, minlength=top), np.bincount(y, minlength=top)])
            counts = counts[:, counts.sum(0) >= 20]  # the rare tail cells dropped
            p = stats.chi2_contingency(counts).pvalue
        else:
            p = stats.ks_2samp(x, y).pvalue
        assert p >= P_MIN, (name, p, float(x.mean()), float(y.mean()))
