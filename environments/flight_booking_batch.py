"""A vectorised model of ``flight_booking`` for the lockstep batch engine.

N worlds live in arrays (episodes × flights); every tool, the expert, the
wrong actions, the ground-truth progress and the agent's visible progress
are written against them, mirroring ``environments.flight_booking`` rule by
rule (the scalar task stays the reference).  Fare rises arrive as the
scalar task's Poisson process, one exponential gap at a time, applied at the
moments the world is read or changed (``sync``): between two reads
the order of the rises is all that matters, so the model is exact in
distribution.  What it leaves out is in docs/batch.md: text (results,
answers) and the ``disturbance`` wrapper.

Actions are integer codes (``SEARCH_WEEK`` ...); a booking also carries a
flight and a payment (``PAY_POINTS`` or ``PAY_CASH``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.flight_booking import FlightBooking, FlightBookingParams
from opar_sim.core.twin import (
    Action,
    SimTaskTwin,
    TwinUnsupported,
    first_match,
    take_rows,
    wrapper_stack,
)

SEARCH_WEEK, SEARCH_WIDE, NEXT_PAGE, CHECK_POINTS, FILTER, FILTER_LOOSE = range(6)
BOOK, CANCEL, ITINERARY = 6, 7, 8
PAY_POINTS, PAY_CASH = 0, 1
RANGE_NONE, RANGE_WEEK, RANGE_WIDE = 0, 1, 2
NONE = -1  # no flight (no shortlist, no booking, no best)


class FlightBookingBatch(SimTaskTwin):
    """N flight-booking worlds advancing together; every field an array over episodes."""

    plan_steps = 5  # len(FlightBooking.plan_template())
    observation_tokens = 30  # FlightBooking's Observation.tokens

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
        stack, inner = wrapper_stack(task)
        if stack:
            names = ", ".join(name for name, _ in stack)
            raise TwinUnsupported(f"flight_booking's twin models no task wrappers ({names})")
        if type(inner) is not FlightBooking:
            raise TwinUnsupported(f"no vectorised model of {type(inner).__name__}")
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
        self.price = np.round(raw, 0).astype(np.float32)
        self.hour = hours
        self.row0 = np.arange(n) * f  # each row's first cell in the flattened (n x f) arrays
        self.hour_ok = hours >= p.earliest_hour
        self.valid = (self.price <= p.max_price) & self.hour_ok  # updated cell by cell on a rise
        self.points_cost = (raw * 60).astype(np.int32)
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
        self.best = self._best_valid()
        has = self.best >= 0
        factor = rng.uniform(0.6, 1.6, n)
        cost = self._at(self.points_cost, self.best)
        self.balance = np.where(has, (cost * factor).astype(np.int64), 0)
        total = p.fare_change_rate * f
        self.rate = total
        self.next_rise = rng.exponential(1.0 / total, n) if total > 0 else np.full(n, np.inf)

    def _best_valid(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The cheapest valid flight of each row (lowest id on ties), or ``NONE``."""
        price = self.price if rows is None else self.price[rows]
        valid = self.valid if rows is None else self.valid[rows]
        masked = np.where(valid, price, np.inf)
        best = np.argmin(masked, axis=1)
        return np.where(valid.any(axis=1), best, NONE)

    def sync(self, now: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> None:
        """Apply every fare rise due by ``now`` in the rows of ``mask`` (a booked fare is locked).

        Args:
            now: Each row's simulated clock.
            mask: The rows to bring up to date.
            rng: The batch's generator.
        """
        f = self.params.n_flights
        due = np.flatnonzero(mask & (self.next_rise <= now))
        while due.size:
            flight = rng.integers(0, f, due.size)
            factor = rng.uniform(1.1, 1.5, due.size)
            free = self.booked[due] != flight
            rows, cols = due[free], flight[free]
            cells = self.row0[rows] + cols
            price = np.round(self.price.reshape(-1)[cells] * factor[free], 0)
            self.price.reshape(-1)[cells] = price
            self.valid.reshape(-1)[cells] &= price <= self.params.max_price
            # a rise only makes a fare dearer: the best flight changes only if it was the one
            moved = rows[self.best[rows] == cols]
            if moved.size:
                self.best[moved] = self._best_valid(moved)
            self.next_rise[due] += rng.exponential(1.0 / self.rate, due.size)
            due = due[self.next_rise[due] <= now[due]]  # only these can have another rise due

    # -- what the agent can see ------------------------------------------------
    def _at(self, matrix: np.ndarray, fid: np.ndarray) -> np.ndarray:
        """``matrix[row, fid[row]]`` for every row (flight 0 where ``fid`` is ``NONE``).

        One flat ``take``: several times cheaper than indexing with two arrays.
        """
        return np.asarray(matrix.reshape(-1).take(self.row0 + np.maximum(fid, 0)))

    def _valid_at(self, fid: np.ndarray) -> np.ndarray:
        """Whether flight ``fid`` of each row meets the constraints at its true fare."""
        return np.asarray(self._at(self.valid, fid) & (fid >= 0))

    def _score(self, best: np.ndarray, right: np.ndarray, visible: np.ndarray) -> np.ndarray:
        """``FlightBooking._score`` per row, given which flight counts as best."""
        score = 0.2 * (visible > 0)
        score += 0.1 * ((best >= 0) & (best < visible))
        score += 0.1 * self.points_known
        short = self.shortlist
        score += self._valid_at(short) * np.where(short == best, 0.2, 0.1)
        out = np.minimum(score, 0.8)
        booked = self.booked >= 0
        if booked.any():
            score -= 0.2
            np.maximum(score, 0.0, out=score)
            np.copyto(out, score, where=booked & ~self.booked_valid)
            done = np.where((self.booked == best) & right, 1.0, 0.8)
            np.copyto(out, done, where=booked & self.booked_valid)
        return np.asarray(out)

    def progress(self) -> np.ndarray:
        """Ground-truth progress of every row (``FlightBooking.progress``)."""
        return self._score(self.best, self.booked_right, self.visible)

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
        # the shortlist, else the cheapest valid seen flight (``seen_cheapest``)
        believed = np.where(self.shortlist < 0, self.seen_cheapest, self.shortlist)
        booked = self.booked >= 0
        known = booked & self.points_known
        belief = self._score(believed, self.booked_right | ~known, self.visible)
        np.copyto(belief, 0.75, where=booked & (self.booked == believed) & ~known)
        return belief

    def _cheapest_seen(self, rows: np.ndarray) -> np.ndarray:
        """The cheapest shown flight valid at its seen fare, for the rows ``rows`` (or NONE)."""
        p = self.params
        seen = self.seen[rows]
        ok = np.arange(p.n_flights)[None, :] < self.visible[rows, None]
        ok &= seen <= p.max_price
        ok &= self.hour_ok[rows]
        cheapest = np.argmin(np.where(ok, seen, np.inf), axis=1)
        return np.where(ok.any(axis=1), cheapest, NONE)

    # -- the expert and the wrong moves -------------------------------------------
    def expert(self) -> Action:
        """(tool, flight, payment) of ``FlightBooking.expert_action`` for every row.

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        p = self.params
        complete = self.complete()
        visible = self.visible
        best = self.best
        cells = self.row0 + np.maximum(best, 0)
        moved = self.seen.reshape(-1).take(cells) != self.price.reshape(-1).take(cells)
        wide = self.range == RANGE_WIDE
        research = np.where(wide, SEARCH_WIDE, SEARCH_WEEK)
        widen = np.where((self.range == RANGE_WEEK) & self.week_empty, SEARCH_WIDE, SEARCH_WEEK)
        tool = first_match(
            [
                (self.booked >= 0) & ~complete,
                complete,
                visible == 0,
                best < 0,
                best >= self.pages * p.page_size,
                ~self.points_known,
                moved,  # NaN (unread) counts as moved
                self.shortlist != best,
            ],
            [CANCEL, ITINERARY, widen, ITINERARY, NEXT_PAGE, CHECK_POINTS, research, FILTER],
            BOOK,
        )
        cost = self.points_cost.reshape(-1).take(cells)
        pay = (self.balance < cost).astype(np.int8)  # PAY_POINTS (0) or PAY_CASH (1)
        return tool, np.where(tool == BOOK, best, NONE), pay

    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """One of ``FlightBooking.wrong_actions``, by ``pick``, for every row.

        Args:
            pick: A uniform per row: action ``int(pick * k)`` of the k in the scalar list.
            need: The rows that take the wrong action (only theirs get a booking's flight).

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        visible = self.visible
        has_book = visible > 0
        has_cancel = self.booked >= 0
        count = 3 + has_book + has_cancel
        pick = (pick * count).astype(np.int8)
        # the list: search, check points, loose filter, [book cheapest by cash], [cancel]
        tool = first_match(
            [pick == 0, pick == 1, pick == 2, (pick == 3) & has_book],
            [SEARCH_WEEK, CHECK_POINTS, FILTER_LOOSE, BOOK],
            CANCEL,
        )
        flight = np.full(self.n, NONE)
        rows = np.flatnonzero(need & (tool == BOOK))  # only these need the cheapest shown flight
        shown = np.arange(self.params.n_flights)[None, :] < visible[rows, None]
        flight[rows] = np.argmin(np.where(shown, self.price[rows], np.inf), axis=1)
        return tool, flight, np.full(self.n, PAY_CASH, np.int8)

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
            (ok, result tokens) per row (meaningful inside ``mask``).
        """
        tool, flight, pay = action
        p = self.params
        n, size, f = self.n, p.page_size, p.n_flights
        ok = mask.copy()
        tokens = np.zeros(n, np.int64)
        visible = self.visible
        code = np.where(mask, tool, np.int8(-1))  # one pass: then each tool's rows is one test
        # search_flights
        week = code == SEARCH_WEEK
        search = week | (code == SEARCH_WIDE)
        ranges = np.where(week, np.int8(RANGE_WEEK), np.int8(RANGE_WIDE))
        np.copyto(self.range, ranges, where=search)
        empty = week & self.week_empty
        found = search & ~empty
        np.copyto(self.pages, 0, where=empty)
        np.copyto(self.pages, 1, where=found)
        np.copyto(tokens, 10, where=empty)
        np.copyto(tokens, 40, where=found)
        # next_page
        paging = code == NEXT_PAGE
        rejected = paging & (visible == 0)
        at_end = paging & ~rejected & (self.pages * size >= f)
        turn = paging & ~rejected & ~at_end
        self.pages += turn
        ok &= ~rejected
        np.copyto(tokens, 6, where=at_end)
        np.copyto(tokens, 40, where=turn)
        shown_changed = search | turn
        self._count_visible(shown_changed)
        # the page just read: its fares are seen now (one flat copy per place on the page),
        # and the cheapest valid seen flight is the page's or, after a turn, the one before
        rows = np.flatnonzero(found | turn)
        if rows.size:
            first = (self.pages[rows] - 1) * size
            cells = self.row0[rows] + first
            seen, price = self.seen.reshape(-1), self.price.reshape(-1)
            valid = self.valid.reshape(-1)
            cheapest = np.where(turn[rows], self.seen_cheapest[rows], NONE)
            fare = seen.take(self.row0[rows] + np.maximum(cheapest, 0))
            fare = np.where(cheapest >= 0, fare, np.inf)
            for j in range(size):
                inside = first + j < f
                cell = np.where(inside, cells + j, cells)  # a place past the last flight: none
                now = price.take(cell)
                seen[cell[inside]] = now[inside]
                better = inside & valid.take(cell) & (now < fare)  # lower ids win ties
                fare = np.where(better, now, fare)
                cheapest = np.where(better, first + j, cheapest)
            self.seen_cheapest[rows] = cheapest
        # check_points
        check = code == CHECK_POINTS
        self.points_known |= check
        np.copyto(tokens, 8, where=check)
        # filter_flights (the seen fare of a shown flight; every shown flight has been read)
        strict = code == FILTER
        if strict.any():  # the goal's own constraints: the cheapest valid seen flight
            np.copyto(self.shortlist, self.seen_cheapest, where=strict)
            anything = strict & (self.seen_cheapest >= 0)
            self.fare_changed_seen &= ~anything
            np.copyto(tokens, 8, where=strict)
            np.copyto(tokens, 10, where=anything)
        rows = np.flatnonzero(code == FILTER_LOOSE)
        if rows.size:
            cols = np.arange(f)[None, :]
            seen_rows = self.seen[rows]
            match = (cols < visible[rows, None]) & (seen_rows <= p.max_price * 1.5)
            match &= self.hour[rows] >= 6
            pick = np.argmin(np.where(match, seen_rows, np.inf), axis=1)
            anything_rows = match.any(axis=1)
            self.shortlist[rows] = np.where(anything_rows, pick, NONE)
            self.fare_changed_seen[rows] &= ~anything_rows
            tokens[rows] = np.where(anything_rows, 10, 8)
        # book_flight
        book = code == BOOK
        risen = np.zeros(n, bool)
        if book.any():
            taken = book & (self.booked >= 0)
            cells = self.row0 + np.maximum(flight, 0)
            price = self.price.reshape(-1).take(cells)
            seen = self.seen.reshape(-1).take(cells)
            risen = book & ~taken & (price > seen)  # NaN (unread) compares False
            self.fare_changed_seen |= risen
            rows = np.flatnonzero(risen)
            self.seen.reshape(-1)[cells[rows]] = price[rows]
            np.copyto(self.shortlist, NONE, where=risen & (self.shortlist == flight))
            cost = self.points_cost.reshape(-1).take(cells)
            poor = book & ~taken & ~risen & (pay == PAY_POINTS) & (self.balance < cost)
            made = book & ~taken & ~risen & ~poor
            np.copyto(self.booked, flight, where=made)
            np.copyto(self.pay, pay, where=made)
            np.copyto(self.booked_valid, self.valid.reshape(-1).take(cells), where=made)
            right = pay == (self.balance < cost)
            np.copyto(self.booked_right, right, where=made)
            ok &= ~(taken | risen | poor)
            np.copyto(tokens, 14, where=made)
            np.copyto(tokens, 8, where=poor)
            np.copyto(tokens, 12, where=risen)
        # cancel_booking
        cancel = code == CANCEL
        nothing = cancel & (self.booked < 0)
        np.copyto(self.booked, NONE, where=cancel)
        ok &= ~nothing
        np.copyto(tokens, 6, where=cancel & ~nothing)
        # get_itinerary
        np.copyto(tokens, 14, where=code == ITINERARY)
        np.copyto(self.seen_cheapest, NONE, where=empty)  # nothing shown
        rows = np.flatnonzero(risen)  # a seen fare rose: search the shown flights again
        if rows.size:
            self.seen_cheapest[rows] = self._cheapest_seen(rows)
        return ok, tokens

    def _count_visible(self, rows: np.ndarray) -> None:
        """Recount the shown flights of the rows of mask ``rows`` (0 unsearched or empty)."""
        p = self.params
        hidden = (self.range == RANGE_NONE) | ((self.range == RANGE_WEEK) & self.week_empty)
        count = np.where(hidden, 0, np.minimum(self.pages * p.page_size, p.n_flights))
        np.copyto(self.visible, count, where=rows)

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep`` (the engine drops finished episodes).

        Args:
            keep: Row indices to keep, in order.
        """
        take_rows(self, keep, self.n)
        self.n = len(keep)
        self.row0 = np.arange(self.n) * self.params.n_flights

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
