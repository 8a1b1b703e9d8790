"""A vectorised model of ``flight_booking`` for the lockstep batch engine.

N worlds live in arrays (episodes × flights); every tool, the expert, the
wrong actions, the ground-truth progress and the agent's visible progress
are written against them, mirroring ``environments.flight_booking`` rule by
rule (the scalar task stays the reference).  Fare rises arrive as the
scalar task's Poisson process, one exponential gap at a time, applied at the
moments the world is read or changed (``disturb_until``): between two reads
the order of the rises is all that matters, so the model is exact in
distribution.  What it leaves out is in docs/batch.md: text (results,
answers) and the ``disturbance`` wrapper.

Actions are integer codes (``SEARCH_WEEK`` ...); a booking also carries a
flight and a payment (``PAY_POINTS`` or ``PAY_CASH``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from environments.flight_booking import FlightBookingParams

SEARCH_WEEK, SEARCH_WIDE, NEXT_PAGE, CHECK_POINTS, FILTER, FILTER_LOOSE = range(6)
BOOK, CANCEL, ITINERARY = 6, 7, 8
PAY_POINTS, PAY_CASH = 0, 1
RANGE_NONE, RANGE_WEEK, RANGE_WIDE = 0, 1, 2
NONE = -1  # no flight (no shortlist, no booking, no best)


class FlightBookingBatch:
    """N flight-booking worlds advancing together; every field an array over episodes."""

    def __init__(self, params: FlightBookingParams) -> None:
        """Hold the task's parameters; ``reset`` draws the worlds.

        Args:
            params: The scalar task's validated parameters.
        """
        self.params = params
        self.n = 0

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
        hours = rng.integers(5, 23, (n, f))
        infeasible = rng.random(n) < p.infeasible_rate
        if infeasible.any():
            low = rng.integers(0, max(p.earliest_hour, 1), (n, f))
            hours = np.where(infeasible[:, None], low, hours)
        self.price = np.round(raw, 0)
        self.hour = hours
        self.points_cost = (raw * 60).astype(np.int64)
        self.seen = np.full((n, f), np.nan)  # the fare last read; NaN: never read
        self.week_empty = rng.random(n) < p.empty_rate
        self.range = np.zeros(n, np.int8)
        self.pages = np.zeros(n, np.int64)
        self.points_known = np.zeros(n, bool)
        self.shortlist = np.full(n, NONE)
        self.booked = np.full(n, NONE)
        self.pay = np.zeros(n, np.int8)
        self.fare_changed_seen = np.zeros(n, bool)
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
        hour = self.hour if rows is None else self.hour[rows]
        p = self.params
        valid = (price <= p.max_price) & (hour >= p.earliest_hour)
        masked = np.where(valid, price, np.inf)
        best = np.argmin(masked, axis=1)
        return np.where(valid.any(axis=1), best, NONE)

    def disturb_until(self, now: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> None:
        """Apply every fare rise due by ``now`` in the rows of ``mask`` (a booked fare is locked).

        Args:
            now: Each row's simulated clock.
            mask: The rows to bring up to date.
            rng: The batch's generator.
        """
        f = self.params.n_flights
        while True:
            due = np.flatnonzero(mask & (self.next_rise <= now))
            if due.size == 0:
                return
            flight = rng.integers(0, f, due.size)
            factor = rng.uniform(1.1, 1.5, due.size)
            free = self.booked[due] != flight
            rows, cols = due[free], flight[free]
            self.price[rows, cols] = np.round(self.price[rows, cols] * factor[free], 0)
            self.best[due] = self._best_valid(due)
            self.next_rise[due] += rng.exponential(1.0 / self.rate, due.size)

    # -- what the agent can see ------------------------------------------------
    def visible_count(self) -> np.ndarray:
        """How many flights each row's agent sees (0 before a search or after an empty one)."""
        p = self.params
        hidden = (self.range == RANGE_NONE) | ((self.range == RANGE_WEEK) & self.week_empty)
        return np.where(hidden, 0, np.minimum(self.pages * p.page_size, p.n_flights))

    def _at(self, matrix: np.ndarray, fid: np.ndarray) -> np.ndarray:
        """``matrix[row, fid[row]]`` for every row (flight 0 where ``fid`` is ``NONE``).

        One flat ``take``: several times cheaper than indexing with two arrays.
        """
        flat = np.arange(self.n) * self.params.n_flights + np.maximum(fid, 0)
        return np.asarray(matrix.reshape(-1).take(flat))

    def _valid_at(self, fid: np.ndarray) -> np.ndarray:
        """Whether flight ``fid`` of each row meets the constraints at its true fare."""
        p = self.params
        ok = (self._at(self.price, fid) <= p.max_price) & (
            self._at(self.hour, fid) >= p.earliest_hour
        )
        return np.asarray(ok & (fid >= 0))

    def right_payment(self, fid: np.ndarray) -> np.ndarray:
        """``PAY_POINTS`` where the balance covers flight ``fid``'s points, else ``PAY_CASH``."""
        cost = self._at(self.points_cost, fid)
        return np.where(self.balance >= cost, PAY_POINTS, PAY_CASH).astype(np.int8)

    def _score(self, best: np.ndarray, right: np.ndarray, visible: np.ndarray) -> np.ndarray:
        """``FlightBooking._score`` per row, given which flight counts as best."""
        seen_best = (best >= 0) & (best < visible)
        score = np.where(visible > 0, 0.2 + 0.1 * seen_best, 0.0)
        score = score + 0.1 * self.points_known
        short_ok = self._valid_at(self.shortlist)
        score = score + np.where(short_ok, np.where(self.shortlist == best, 0.2, 0.1), 0.0)
        booked = self.booked >= 0
        valid_booking = self.booked_valid
        done = np.where((self.booked == best) & right, 1.0, 0.8)
        out = np.where(
            booked,
            np.where(valid_booking, done, np.maximum(0.0, score - 0.2)),
            np.minimum(score, 0.8),
        )
        return np.asarray(out)

    def progress(self) -> np.ndarray:
        """Ground-truth progress of every row (``FlightBooking.progress``)."""
        return self._score(self.best, self.booked_right, self.visible_count())

    def visible_progress(self) -> np.ndarray:
        """What each row's agent infers (``FlightBooking._observation``'s visible progress)."""
        p = self.params
        visible = self.visible_count()
        believed = self.shortlist.copy()
        # the cheapest valid seen flight, only where there is no shortlist to believe
        rows = np.flatnonzero((believed < 0) & (visible > 0))
        shown = np.arange(p.n_flights)[None, :] < visible[rows, None]
        seen = self.seen[rows]
        seen_valid = shown & (seen <= p.max_price) & (self.hour[rows] >= p.earliest_hour)
        cheapest = np.argmin(np.where(seen_valid, seen, np.inf), axis=1)
        believed[rows] = np.where(seen_valid.any(axis=1), cheapest, NONE)
        known = (self.booked >= 0) & self.points_known
        right = np.where(known, self.booked_right, True)
        belief = self._score(believed, right, visible)
        skipped = (self.booked >= 0) & (self.booked == believed) & ~known
        return np.where(skipped, 0.75, belief)

    # -- the expert and the wrong moves -------------------------------------------
    def expert(self, complete: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(tool, flight, payment) of ``FlightBooking.expert_action`` for every row.

        Args:
            complete: Each row's ``complete`` now.

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        p = self.params
        visible = self.visible_count()
        best = self.best
        moved = self._at(self.seen, best) != self._at(self.price, best)  # NaN (unread): moved
        research = np.where(self.range == RANGE_WIDE, SEARCH_WIDE, SEARCH_WEEK)
        widen = np.where((self.range == RANGE_WEEK) & self.week_empty, SEARCH_WIDE, SEARCH_WEEK)
        tool = first_match(
            [
                (self.booked >= 0) & ~complete,
                complete,
                visible == 0,
                best < 0,
                best >= self.pages * p.page_size,
                ~self.points_known,
                moved,
                self.shortlist != best,
            ],
            [CANCEL, ITINERARY, widen, ITINERARY, NEXT_PAGE, CHECK_POINTS, research, FILTER],
            BOOK,
        )
        return tool, np.where(tool == BOOK, best, NONE), self.right_payment(best)

    def wrong(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One of ``FlightBooking.wrong_actions``, uniformly, for every row.

        Args:
            rng: The batch's generator.

        Returns:
            Tool codes, the flight of a booking (else ``NONE``) and its payment.
        """
        visible = self.visible_count()
        has_book = visible > 0
        has_cancel = self.booked >= 0
        count = 3 + has_book + has_cancel
        pick = (rng.random(self.n) * count).astype(np.int64)
        # the list: search, check points, loose filter, [book cheapest by cash], [cancel]
        tool = first_match(
            [pick == 0, pick == 1, pick == 2, (pick == 3) & has_book],
            [SEARCH_WEEK, CHECK_POINTS, FILTER_LOOSE, BOOK],
            CANCEL,
        )
        flight = np.full(self.n, NONE)
        rows = np.flatnonzero(tool == BOOK)  # only these need the cheapest shown flight
        shown = np.arange(self.params.n_flights)[None, :] < visible[rows, None]
        flight[rows] = np.argmin(np.where(shown, self.price[rows], np.inf), axis=1)
        return tool, flight, np.full(self.n, PAY_CASH, np.int8)

    # -- tools -------------------------------------------------------------------
    def apply(
        self, mask: np.ndarray, tool: np.ndarray, flight: np.ndarray, pay: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Run the delivered calls of the rows in ``mask`` (``FlightBooking._tool_*``).

        Args:
            mask: Rows whose call arrived (no failure, no timeout).
            tool: Tool codes.
            flight: The flight of each booking.
            pay: The payment of each booking.

        Returns:
            (ok, result tokens) per row (meaningful inside ``mask``).
        """
        p = self.params
        n, size = self.n, p.page_size
        ok = np.ones(n, bool)
        tokens = np.zeros(n, np.int64)
        visible = self.visible_count()
        # search_flights
        search = mask & ((tool == SEARCH_WEEK) | (tool == SEARCH_WIDE))
        self.range = np.where(
            search, np.where(tool == SEARCH_WEEK, RANGE_WEEK, RANGE_WIDE), self.range
        ).astype(np.int8)
        empty = search & (tool == SEARCH_WEEK) & self.week_empty
        found = search & ~empty
        self.pages = np.where(empty, 0, np.where(found, 1, self.pages))
        tokens = np.where(empty, 10, np.where(found, 40, tokens))
        # next_page
        paging = mask & (tool == NEXT_PAGE)
        rejected = paging & (visible == 0)
        at_end = paging & ~rejected & (self.pages * size >= p.n_flights)
        turn = paging & ~rejected & ~at_end
        self.pages = np.where(turn, self.pages + 1, self.pages)
        ok &= ~rejected
        tokens = np.where(at_end, 6, np.where(turn, 40, tokens))
        # the page just read: its fares are seen now
        rows = np.flatnonzero(found | turn)  # the (rows x flights) work only where needed
        if rows.size:
            cols = np.arange(p.n_flights)[None, :]
            first = ((self.pages[rows] - 1) * size)[:, None]
            page = (cols >= first) & (cols < first + size)
            self.seen[rows] = np.where(page, self.price[rows], self.seen[rows])
        # check_points
        check = mask & (tool == CHECK_POINTS)
        self.points_known |= check
        tokens = np.where(check, 8, tokens)
        # filter_flights (the seen fare of a shown flight; every shown flight has been read)
        filt = mask & ((tool == FILTER) | (tool == FILTER_LOOSE))
        rows = np.flatnonzero(filt)
        if rows.size:
            loose = tool[rows] == FILTER_LOOSE
            max_price = np.where(loose, p.max_price * 1.5, p.max_price)
            earliest = np.where(loose, 6, p.earliest_hour)
            cols = np.arange(p.n_flights)[None, :]
            seen = self.seen[rows]
            match = (cols < visible[rows, None]) & (seen <= max_price[:, None])
            match &= self.hour[rows] >= earliest[:, None]
            pick = np.argmin(np.where(match, seen, np.inf), axis=1)
            anything = match.any(axis=1)
            self.shortlist[rows] = np.where(anything, pick, NONE)
            self.fare_changed_seen[rows] &= ~anything
            tokens[rows] = np.where(anything, 10, 8)
        # book_flight
        book = mask & (tool == BOOK)
        if book.any():
            taken = book & (self.booked >= 0)
            price = self._at(self.price, flight)
            seen = self._at(self.seen, flight)
            risen = book & ~taken & ~np.isnan(seen) & (price > seen)
            self.fare_changed_seen |= risen
            rows = np.flatnonzero(risen)
            self.seen[rows, flight[rows]] = price[rows]
            self.shortlist = np.where(risen & (self.shortlist == flight), NONE, self.shortlist)
            poor = book & ~taken & ~risen & (pay == PAY_POINTS)
            poor &= self.balance < self._at(self.points_cost, flight)
            made = book & ~taken & ~risen & ~poor
            self.booked = np.where(made, flight, self.booked)
            self.pay = np.where(made, pay, self.pay).astype(np.int8)
            valid = self._valid_at(flight)
            right = pay == self.right_payment(flight)
            self.booked_valid = np.where(made, valid, self.booked_valid)
            self.booked_right = np.where(made, right, self.booked_right)
            ok &= ~(taken | risen | poor)
            tokens = np.where(risen, 12, np.where(poor, 8, np.where(made, 14, tokens)))
        # cancel_booking
        cancel = mask & (tool == CANCEL)
        nothing = cancel & (self.booked < 0)
        self.booked = np.where(cancel & ~nothing, NONE, self.booked)
        ok &= ~nothing
        tokens = np.where(cancel & ~nothing, 6, tokens)
        # get_itinerary
        tokens = np.where(mask & (tool == ITINERARY), 14, tokens)
        return ok, tokens

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep`` (the engine drops finished episodes).

        Args:
            keep: Row indices to keep, in order.
        """
        take_rows(self, keep, self.n)
        self.n = len(keep)


def first_match(conditions: list[np.ndarray], choices: list[Any], default: int) -> np.ndarray:
    """``np.select`` (the first true condition's choice, else ``default``) as integer codes.

    Written from the last condition to the first, one masked assignment each:
    several times cheaper than ``np.select`` on long arrays.
    """
    out = np.full(len(conditions[0]), default, np.int64)
    for condition, choice in zip(reversed(conditions), reversed(choices), strict=True):
        if isinstance(choice, np.ndarray):
            out[condition] = choice[condition]
        else:
            out[condition] = choice
    return out


def take_rows(obj: Any, keep: np.ndarray, n: int) -> None:
    """Index every array attribute of ``obj`` whose first dimension is ``n`` by ``keep``.

    Args:
        obj: An object holding per-episode arrays as attributes.
        keep: Row indices to keep.
        n: The current number of rows.
    """
    for name, value in vars(obj).items():
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == n:
            setattr(obj, name, value[keep])
