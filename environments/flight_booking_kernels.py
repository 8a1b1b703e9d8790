"""The row loops of ``flight_booking``'s batch twin, compiled by Numba.

``FlightBookingBatch`` (``flight_booking_batch.py``) holds N worlds in arrays;
the rules that read and change one world per step (the expert's action, a wrong
action, a tool call's effect, the progress score) run here as plain loops over
the rows, compiled once per machine (``cache=True``).  Each loop body states
the scalar task's rule (``environments.flight_booking``) for one row, so the
arithmetic is the scalar task's in the same order: the twin's results do not
depend on whether a rule is written as array passes or as this loop (the
exactness test drives both engines from one draw stream).

Fares are float32 (whole numbers, exact), so a fare is compared with a limit
cast to float32, as numpy compares a float32 array with a Python float.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SEARCH_WEEK, SEARCH_WIDE, NEXT_PAGE, CHECK_POINTS, FILTER, FILTER_LOOSE = range(6)
BOOK, CANCEL, ITINERARY = 6, 7, 8
PAY_POINTS, PAY_CASH = 0, 1
RANGE_NONE, RANGE_WEEK, RANGE_WIDE = 0, 1, 2
NONE = -1  # no flight (no shortlist, no booking, no best)


@njit(cache=True, nogil=True)
def score(best: np.ndarray, right: np.ndarray, w: tuple[np.ndarray, ...]) -> np.ndarray:
    """``FlightBooking._score`` of every row, given which flight counts as best in each.

    ``w`` is the world (``FlightBookingBatch.fields``); ``right``: whether the booking was
    paid the right way (counted only for the best flight).
    """
    visible, valid, points_known, shortlist = w[3], w[6], w[9], w[10]
    booked, booked_valid = w[12], w[14]
    out = np.empty(best.size)
    for i in range(best.size):
        b = best[i]
        s = 0.2 if visible[i] > 0 else 0.0
        s += 0.1 if (b >= 0 and b < visible[i]) else 0.0
        s += 0.1 if points_known[i] else 0.0
        short = shortlist[i]
        if short >= 0 and valid[i, short]:
            s += 0.2 if short == b else 0.1
        else:
            s += 0.0
        if booked[i] < 0:
            out[i] = min(s, 0.8)
        elif booked_valid[i]:
            out[i] = 1.0 if (booked[i] == b and right[i]) else 0.8
        else:
            out[i] = max(s - 0.2, 0.0)
    return out


@njit(cache=True, nogil=True)
def belief(w: tuple[np.ndarray, ...]) -> np.ndarray:
    """What each row's agent infers (``FlightBooking._observation``'s visible progress)."""
    seen_cheapest, points_known, shortlist, booked, booked_right = w[8], w[9], w[10], w[12], w[15]
    n = booked.size
    believed = np.empty(n, np.int64)
    right = np.empty(n, np.bool_)
    for i in range(n):  # the shortlist, else the cheapest valid seen flight
        believed[i] = seen_cheapest[i] if shortlist[i] < 0 else shortlist[i]
        right[i] = booked_right[i] or not (booked[i] >= 0 and points_known[i])
    out = score(believed, right, w)
    for i in range(n):  # booked what it believes best, not knowing how it should have paid
        if booked[i] >= 0 and booked[i] == believed[i] and not points_known[i]:
            out[i] = 0.75
    return out


@njit(cache=True, nogil=True)
def choose(
    expert: np.ndarray,
    pick: np.ndarray,
    need: np.ndarray,
    w: tuple[np.ndarray, ...],
    page_size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's action: the expert's where ``expert``, else a wrong one chosen by ``pick``.

    The expert's is ``FlightBooking.expert_action``; a wrong one is action ``int(pick * k)``
    of the k of ``FlightBooking.wrong_actions``.  ``expert`` all true gives the expert's
    actions, all false the wrong ones; ``need`` marks the rows that take a wrong action
    (only theirs get a booking's flight).  Returns (tool, flight of a booking, payment).
    """
    search_range, pages, week_empty, visible, seen, price = w[0], w[1], w[2], w[3], w[4], w[5]
    points_known, shortlist, booked = w[9], w[10], w[12]
    booked_valid, booked_right, balance, points_cost, best = w[14], w[15], w[16], w[17], w[18]
    n = pick.size
    tool = np.empty(n, np.int8)
    flight = np.full(n, NONE, np.int64)
    pay = np.full(n, PAY_CASH, np.int8)
    for i in range(n):
        if not expert[i]:  # the list: search, check points, loose filter, [book], [cancel]
            has_book = visible[i] > 0
            k = int(pick[i] * (3 + (1 if has_book else 0) + (1 if booked[i] >= 0 else 0)))
            if k == 0:
                tool[i] = SEARCH_WEEK
            elif k == 1:
                tool[i] = CHECK_POINTS
            elif k == 2:
                tool[i] = FILTER_LOOSE
            elif k == 3 and has_book:  # the cheapest shown flight, by cash
                tool[i] = BOOK
                if need[i]:  # only the rows that take it need the flight
                    flight[i] = _cheapest(price[i], visible[i])
            else:
                tool[i] = CANCEL
            continue
        b = best[i]
        cell = max(b, 0)
        complete = booked[i] == b and booked[i] >= 0 and booked_valid[i] and booked_right[i]
        if booked[i] >= 0 and not complete:
            t = CANCEL
        elif complete:
            t = ITINERARY
        elif visible[i] == 0:
            widen = search_range[i] == RANGE_WEEK and week_empty[i]
            t = SEARCH_WIDE if widen else SEARCH_WEEK
        elif b < 0:
            t = ITINERARY
        elif b >= pages[i] * page_size:
            t = NEXT_PAGE
        elif not points_known[i]:
            t = CHECK_POINTS
        elif seen[i, cell] != price[i, cell]:  # NaN (unread) counts as moved
            t = SEARCH_WIDE if search_range[i] == RANGE_WIDE else SEARCH_WEEK
        elif shortlist[i] != b:
            t = FILTER
        else:
            t = BOOK
            flight[i] = b
        tool[i] = t
        pay[i] = PAY_CASH if balance[i] < points_cost[i, cell] else PAY_POINTS
    return tool, flight, pay


@njit(cache=True, nogil=True, inline="always")
def _cheapest(fares: np.ndarray, shown: int) -> int:
    """The first of the ``shown`` flights at the lowest fare."""
    best, fare = 0, np.inf
    for j in range(shown):
        if fares[j] < fare:
            best, fare = j, fares[j]
    return best


@njit(cache=True, nogil=True, inline="always")
def _cheapest_seen(
    i: int,
    seen: np.ndarray,
    shown: int,
    hour: np.ndarray,
    min_hour: int,
    limit: np.float32,
) -> int:
    """Row ``i``'s cheapest of the ``shown`` flights at a seen fare within ``limit``, or ``NONE``.

    A flight counts when its seen fare is at most ``limit`` (an unread fare, NaN, never
    is) and it departs at ``min_hour`` or later; the lowest id wins a tie.
    """
    best, fare = NONE, np.float32(np.inf)
    for j in range(shown):
        value = seen[i, j]
        if value <= limit and hour[i, j] >= min_hour and (best < 0 or value < fare):
            best, fare = j, value
    return best


@njit(cache=True, nogil=True)
def apply(
    mask: np.ndarray,
    tool: np.ndarray,
    flight: np.ndarray,
    pay: np.ndarray,
    w: tuple[np.ndarray, ...],  # the world's arrays, in ``FlightBookingBatch.fields`` order
    page_size: int,
    earliest_hour: int,
    limit: np.float32,
    loose_limit: np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Run the delivered calls of the rows of ``mask`` (``FlightBooking._tool_*``): (ok, tokens)."""
    (search_range, pages, week_empty, visible, seen, price, valid, hour, seen_cheapest) = w[:9]
    (points_known, shortlist, fare_changed_seen, booked, paid, booked_valid) = w[9:15]
    (booked_right, balance, points_cost) = w[15:18]
    n, f = mask.size, price.shape[1]
    ok = np.zeros(n, np.bool_)
    tokens = np.zeros(n, np.int64)
    for i in range(n):
        if not mask[i]:
            continue
        t = tool[i]
        ok[i] = True
        read = False  # a page of results read: its fares are seen now
        if t in (SEARCH_WEEK, SEARCH_WIDE):
            search_range[i] = RANGE_WEEK if t == SEARCH_WEEK else RANGE_WIDE
            if t == SEARCH_WEEK and week_empty[i]:
                pages[i] = 0
                tokens[i] = 10
                seen_cheapest[i] = NONE  # nothing shown
            else:
                pages[i] = 1
                tokens[i] = 40
                read = True
        elif t == NEXT_PAGE:
            if visible[i] == 0:
                ok[i] = False
            elif pages[i] * page_size >= f:
                tokens[i] = 6
            else:
                pages[i] += 1
                tokens[i] = 40
                read = True
        elif t == CHECK_POINTS:
            points_known[i] = True
            tokens[i] = 8
        elif t in (FILTER, FILTER_LOOSE):
            if t == FILTER:  # the goal's own constraints: the cheapest valid seen flight
                pick = seen_cheapest[i]
            else:
                pick = _cheapest_seen(i, seen, visible[i], hour, 6, loose_limit)
            shortlist[i] = pick
            if pick >= 0:
                fare_changed_seen[i] = False
            tokens[i] = 10 if pick >= 0 else 8
        elif t == BOOK:
            if booked[i] >= 0:
                ok[i] = False
                continue
            cell = max(flight[i], 0)
            cost = points_cost[i, cell]
            if price[i, cell] > seen[i, cell]:  # the fare rose since it was read (NaN: unread)
                fare_changed_seen[i] = True
                seen[i, cell] = price[i, cell]
                if shortlist[i] == flight[i]:
                    shortlist[i] = NONE
                ok[i] = False
                tokens[i] = 12
                # a seen fare rose: search the shown flights again
                seen_cheapest[i] = _cheapest_seen(i, seen, visible[i], hour, earliest_hour, limit)
            elif pay[i] == PAY_POINTS and balance[i] < cost:
                ok[i] = False
                tokens[i] = 8
            else:
                booked[i] = flight[i]
                paid[i] = pay[i]
                booked_valid[i] = valid[i, cell]
                booked_right[i] = pay[i] == (1 if balance[i] < cost else 0)
                tokens[i] = 14
        elif t == CANCEL:
            if booked[i] < 0:
                ok[i] = False
            else:
                tokens[i] = 6
            booked[i] = NONE
        else:  # ITINERARY
            tokens[i] = 14
        if t in (SEARCH_WEEK, SEARCH_WIDE) or read:  # the shown flights changed: recount
            hidden = search_range[i] == RANGE_NONE or (
                search_range[i] == RANGE_WEEK and week_empty[i]
            )
            visible[i] = 0 if hidden else min(pages[i] * page_size, f)
        if read:
            _read_page(i, t == NEXT_PAGE, pages[i], page_size, seen, price, valid, seen_cheapest)
    return ok, tokens


@njit(cache=True, nogil=True, inline="always")
def _read_page(
    i: int,
    turn: bool,
    page: int,
    page_size: int,
    seen: np.ndarray,
    price: np.ndarray,
    valid: np.ndarray,
    seen_cheapest: np.ndarray,
) -> None:
    """Row ``i`` reads page ``page``: its fares are seen, and the cheapest valid seen is kept.

    The cheapest valid seen flight is the page's or, after a turn, the one before (the
    pages before were read at their own time); the lowest id wins a tie.
    """
    first = (page - 1) * page_size
    cheapest = seen_cheapest[i] if turn else NONE
    fare = seen[i, max(cheapest, 0)] if cheapest >= 0 else np.float32(np.inf)
    for j in range(first, min(first + page_size, price.shape[1])):
        now = price[i, j]
        seen[i, j] = now
        if valid[i, j] and now < fare:
            fare, cheapest = now, j
    seen_cheapest[i] = cheapest


@njit(cache=True, nogil=True)
def rise(
    due: np.ndarray,
    flight: np.ndarray,
    factor: np.ndarray,
    price: np.ndarray,
    valid: np.ndarray,
    booked: np.ndarray,
    best: np.ndarray,
    max_price: float,
) -> None:
    """Raise fare ``flight[k]`` of row ``due[k]`` by ``factor[k]`` (a booked fare is locked).

    A rise only makes a fare dearer: a row's best flight changes only if it was the one.
    """
    for k in range(due.size):
        i, j = due[k], flight[k]
        if booked[i] == j:
            continue
        fare = np.rint(np.float64(price[i, j]) * factor[k])  # whole numbers, as np.round(x, 0)
        price[i, j] = fare
        valid[i, j] = valid[i, j] and fare <= max_price
        if best[i] == j:
            best[i] = _cheapest_valid(price[i], valid[i])


@njit(cache=True, nogil=True, inline="always")
def _cheapest_valid(fares: np.ndarray, valid: np.ndarray) -> int:
    """The cheapest valid flight of one row (lowest id on ties), or ``NONE``."""
    best, fare = NONE, np.float32(np.inf)
    for j in range(fares.size):
        if valid[j] and (best < 0 or fares[j] < fare):
            best, fare = j, fares[j]
    return best


@njit(cache=True, nogil=True)
def fares(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each drawn fare rounded to a whole number (float32), and its points cost (int32).

    As ``np.round(raw, 0).astype(np.float32)`` and ``(raw * 60).astype(np.int32)``:
    half to even, then truncation toward zero.
    """
    price = np.empty(raw.shape, np.float32)
    points = np.empty(raw.shape, np.int32)
    for i in range(raw.shape[0]):
        for j in range(raw.shape[1]):
            price[i, j] = np.float32(np.rint(raw[i, j]))
            points[i, j] = np.int32(raw[i, j] * 60)
    return price, points


@njit(cache=True, nogil=True)
def derive(
    price: np.ndarray, hour: np.ndarray, limit: np.float32, earliest_hour: int
) -> tuple[np.ndarray, np.ndarray]:
    """Which flights are valid (fare within ``limit``, late enough), and each row's best."""
    valid = np.empty(price.shape, np.bool_)
    best = np.empty(price.shape[0], np.int64)
    for i in range(price.shape[0]):
        for j in range(price.shape[1]):
            valid[i, j] = (price[i, j] <= limit) & (hour[i, j] >= earliest_hour)
        best[i] = _cheapest_valid(price[i], valid[i])
    return valid, best


@njit(cache=True, nogil=True)
def due(mask: np.ndarray, next_rise: np.ndarray, now: np.ndarray) -> np.ndarray:
    """The rows of ``mask`` with a fare rise due by their clock ``now``."""
    rows = np.empty(mask.size, np.int64)
    k = 0
    for i in range(mask.size):
        if mask[i] and next_rise[i] <= now[i]:
            rows[k] = i
            k += 1
    return rows[:k]
