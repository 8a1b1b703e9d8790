"""The vectorised flight_booking against the scalar task, world by world, action by action.

Each row of a ``FlightBookingBatch`` is copied into a scalar ``FlightBooking``;
both then take the same actions (the scalar expert's or one of its wrong
moves, at random) and the same fare rises.  After every action the tool's
``ok`` and result tokens, the hidden progress, ``complete``, the agent's
visible progress, the fare-change flag, the best flight and the expert's
next action must be equal on every row: the cached state of the batch model
(validity, shown count, cheapest seen flight, best flight) is checked
against the scalar task's recomputation.
"""

from __future__ import annotations

import numpy as np

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
