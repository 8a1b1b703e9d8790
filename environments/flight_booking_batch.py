"""A vectorised model of ``flight_booking`` for the lockstep batch engine.

N worlds live in arrays (episodes × flights); every tool, the expert, the
wrong actions, the ground-truth progress and the agent's visible progress
are written against them, mirroring ``environments.flight_booking`` rule by
rule (the scalar task stays the reference).  The rules run as row loops
compiled by Numba (``flight_booking_kernels``); this class holds the arrays.
Fare rises arrive as the scalar task's Poisson process, one exponential gap
at a time, applied at the moments the world is read or changed (``sync``):
between two reads the order of the rises is all that matters, so the model is exact in
distribution.  What it leaves out is in docs/batch.md: text (results,
answers) and the ``disturbance`` wrapper.

Actions are integer codes (``kernels.SEARCH_WEEK`` ...); a booking also carries a
flight and a payment (``PAY_POINTS`` or ``PAY_CASH``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments import flight_booking_kernels as kernels
from environments.flight_booking import FlightBooking, FlightBookingParams
from environments.flight_booking_kernels import (
    BOOK,
    CANCEL,
    ITINERARY,
    NONE,
    PAY_POINTS,
)
from opar_sim.core.twin import Action, SimTaskTwin, take_rows, unwrapped


class FlightBookingBatch(SimTaskTwin):
    """N flight-booking worlds advancing together; every field an array over episodes."""

    plan_steps = 5  # len(FlightBooking.plan_template())
    observation_tokens = 30  # FlightBooking's Observation.tokens
    # the world's arrays a tool call reads and changes (``kernels.apply``'s ``w``), in order
    fields = (
        "range",
        "pages",
        "week_empty",
        "visible",
        "seen",
        "price",
        "valid",
        "hour",
        "seen_cheapest",
        "points_known",
        "shortlist",
        "fare_changed_seen",
        "booked",
        "pay",
        "booked_valid",
        "booked_right",
        "balance",
        "points_cost",
        "best",
    )

    def __init__(self, params: FlightBookingParams) -> None:
        """Hold the task's parameters; ``reset`` draws the worlds.

        Args:
            params: The scalar task's validated parameters.
        """
        self.params = params
        self.tools = params.tools
        self.task: Any = None  # the scalar task, for the step rows' labels (``from_task``)
        self.n = 0

    @classmethod
    def from_task(cls, task: Any) -> FlightBookingBatch:
        """The twin of a built ``FlightBooking`` (the task's registered twin factory).

        Args:
            task: The built task.

        Returns:
            Its twin, with the task's parameters.

        Raises:
            TwinUnsupported: If the task is wrapped or is not exactly ``FlightBooking``.
        """
        inner = unwrapped(task, "flight_booking", FlightBooking)
        twin = cls(inner.params)
        twin.task = inner  # the step rows' labels are the scalar task's own
        return twin

    # -- world -----------------------------------------------------------------
    def reset(self, n: int, rng: np.random.Generator) -> None:
        """Draw ``n`` hidden worlds as ``FlightBooking._reset_world`` does, one per row.

        Args:
            n: Episodes.
            rng: The batch's generator.
        """
        p = self.params
        f = p.n_flights
        self.n = n
        raw = rng.uniform(0.55, 1.6, (n, f)) * p.max_price
        # the world's matrices in narrow dtypes (fares are whole numbers, exact in float32):
        # half to an eighth of the memory traffic of the row gathers
        hours = rng.integers(5, 23, (n, f), dtype=np.int16)
        infeasible = np.flatnonzero(rng.random(n) < p.infeasible_rate)
        if infeasible.size:
            shape = (infeasible.size, f)
            hours[infeasible] = rng.integers(0, max(p.earliest_hour, 1), shape, dtype=np.int16)
        self.price, self.points_cost = kernels.fares(raw)
        self.hour = hours
        self.seen = np.full((n, f), np.nan, np.float32)  # the fare last read; NaN: never read
        self.week_empty = rng.random(n) < p.empty_rate
        self.range = np.zeros(n, np.int8)
        self.pages = np.zeros(n, np.int32)
        self.points_known = np.zeros(n, bool)
        self.shortlist = np.full(n, NONE)
        self.booked = np.full(n, NONE)
        self.pay = np.zeros(n, np.int8)
        self.fare_changed_seen = np.zeros(n, bool)
        # the cheapest valid flight at its seen fare among the shown ones (NONE: none); the
        # seen fares and the shown count change only in ``apply``, so it is kept up to date there
        self.seen_cheapest = np.full(n, NONE)
        self.visible = np.zeros(n, np.int32)  # flights shown (``_count_visible``)
        # a booked fare is locked, so a booking's validity and payment are fixed when it is made
        self.booked_valid = np.zeros(n, bool)
        self.booked_right = np.zeros(n, bool)
        self._derive()
        has = self.best >= 0
        factor = rng.uniform(0.6, 1.6, n)
        cost = self.points_cost[np.arange(n), np.maximum(self.best, 0)]
        self.balance = np.where(has, (cost * factor).astype(np.int64), 0)
        total = p.fare_change_rate * f
        self.rate = total
        self.next_rise = rng.exponential(1.0 / total, n) if total > 0 else np.full(n, np.inf)

    def _derive(self) -> None:
        """The fields that follow from the fares and hours: validity and the best flight."""
        p = self.params
        # updated cell by cell on a rise (``sync``)
        limit = np.float32(p.max_price)  # a fare is compared in float32, as numpy compares it
        self.valid, self.best = kernels.derive(self.price, self.hour, limit, p.earliest_hour)

    def sync(self, now: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> None:
        """Apply every fare rise due by ``now`` in the rows of ``mask`` (a booked fare is locked).

        Args:
            now: Each row's simulated clock.
            mask: The rows to bring up to date.
            rng: The batch's generator.
        """
        f = self.params.n_flights
        due = kernels.due(mask, self.next_rise, now)
        while due.size:
            flight = rng.integers(0, f, due.size)
            factor = rng.uniform(1.1, 1.5, due.size)
            kernels.rise(
                due,
                flight,
                factor,
                self.price,
                self.valid,
                self.booked,
                self.best,
                float(self.params.max_price),
            )
            self.next_rise[due] += rng.exponential(1.0 / self.rate, due.size)
            due = due[self.next_rise[due] <= now[due]]  # only these can have another rise due

    # -- what the agent can see ------------------------------------------------
    def _world(self) -> tuple[np.ndarray, ...]:
        """The world's arrays in ``fields`` order (the kernels' ``w``)."""
        return tuple(getattr(self, name) for name in self.fields)

    def progress(self) -> np.ndarray:
        """Ground-truth progress of every row (``FlightBooking.progress``)."""
        return np.asarray(kernels.score(self.best, self.booked_right, self._world()))

    def feasible(self) -> np.ndarray:
        """Whether any flight of each row meets the constraints (at its true fare)."""
        return np.asarray(self.best >= 0)

    def world_changed(self) -> np.ndarray:
        """Whether each row's agent saw a fare change (``Observation.world_changed``)."""
        return self.fare_changed_seen

    def complete(self) -> np.ndarray:
        """Whether each row's progress is 1.0: the best flight booked, paid the right way."""
        done = (self.booked == self.best) & (self.booked >= 0)
        return np.asarray(done & self.booked_valid & self.booked_right)

    def visible_progress(self) -> np.ndarray:
        """What each row's agent infers (``FlightBooking._observation``'s visible progress)."""
        return np.asarray(kernels.belief(self._world()))

    # -- the expert and the wrong moves -------------------------------------------
    def expert(self) -> Action:
        """(tool, flight, payment) of ``FlightBooking.expert_action`` for every row.

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        every, none = np.ones(self.n, bool), np.zeros(self.n, bool)
        return self.act(every, np.zeros(self.n), none)

    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """One of ``FlightBooking.wrong_actions``, by ``pick``, for every row.

        Args:
            pick: A uniform per row: action ``int(pick * k)`` of the k in the scalar list.
            need: The rows that take the wrong action (only theirs get a booking's flight).

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        return self.act(np.zeros(self.n, bool), pick, need)

    def act(self, expert: np.ndarray, pick: np.ndarray, need: np.ndarray) -> Action:
        """The expert's action where ``expert``, else the wrong one ``pick`` chooses, per row.

        Args:
            expert: The rows that take the expert's action.
            pick: A uniform per row choosing a wrong action (``wrong``).
            need: The rows that take a wrong action.

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        world = self._world()
        return tuple(kernels.choose(expert, pick, need, world, self.params.page_size))

    def action_key(self, action: Action) -> np.ndarray:
        """Each row's (tool, flight, payment) as one small integer (``label`` reads it)."""
        tool, flight, pay = action
        flights = self.params.n_flights + 1
        key = (tool.astype(np.int64) * flights + flight + 1) * 2 + pay
        return np.asarray(key)

    def label(self, key: int) -> tuple[str, str]:
        """The label and tool of the scalar task's call ``key`` names (``action_key``)."""
        task = self.task
        rest, pay = divmod(key, 2)
        tool, flight = divmod(rest, self.params.n_flights + 1)
        if tool == BOOK:
            action = task._book(flight - 1, "points" if pay == PAY_POINTS else "cash")
        else:
            names = ("next_week", "widened", "next_page", "check_points", "filter", "filter_loose")
            name = {CANCEL: "cancel", ITINERARY: "itinerary"}.get(tool) or names[tool]
            action = task._calls[name]
        return action.label(), action.tool

    # -- tools -------------------------------------------------------------------
    def apply(self, mask: np.ndarray, action: Action) -> tuple[np.ndarray, np.ndarray]:
        """Run the delivered calls of the rows in ``mask`` (``FlightBooking._tool_*``).

        Args:
            mask: Rows whose call arrived (no failure, no timeout).
            action: Tool codes, the flight of each booking and its payment.

        Returns:
            (ok, result tokens) per row (zero outside ``mask``).
        """
        tool, flight, pay = action
        p = self.params
        world = self._world()
        ok, tokens = kernels.apply(
            mask,
            tool,
            flight,
            pay,
            world,
            p.page_size,
            p.earliest_hour,
            np.float32(p.max_price),
            np.float32(p.max_price * 1.5),
        )
        return np.asarray(ok), np.asarray(tokens)

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep`` (the engine drops finished episodes).

        Args:
            keep: Row indices to keep, in order.
        """
        take_rows(self, keep, self.n)
        self.n = len(keep)

    def answer_fields(self) -> dict[str, np.ndarray]:
        """The booking of every row: flight (``NONE``: none), departure, fare and payment."""
        safe = np.maximum(self.booked, 0)
        rows = np.arange(self.n)
        return {
            "booked": self.booked.copy(),
            "hour": self.hour[rows, safe].astype(np.int64),
            "price": self.price[rows, safe].astype(np.float64),
            "pay": self.pay.copy(),
        }

    def answers(self, fields: dict[str, np.ndarray]) -> list[str]:
        """Each ended row's final answer, as ``FlightBooking.answer`` words it."""
        return [
            "no booking"
            if fid < 0
            else f"flight #{fid} at {hour:02d}:00 for {price:.0f}, paid by "
            + ("points" if pay == PAY_POINTS else "cash")
            for fid, hour, price, pay in zip(
                fields["booked"].tolist(),
                fields["hour"].tolist(),
                fields["price"].tolist(),
                fields["pay"].tolist(),
                strict=True,
            )
        ]
