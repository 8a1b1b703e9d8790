"""The motivating scenario of the OPAR document: book next week's best flight to Tokyo.

Goal
    Book the cheapest flight next week priced below ``max_price`` that departs
    no earlier than ``earliest_hour``; pay with points when the balance covers
    the flight's points cost, otherwise with cash.
Tools
    ``search_flights(range)`` ("next_week" or "widened"), ``next_page()``,
    ``check_points()``, ``filter_flights(max_price, earliest_hour)``,
    ``book_flight(flight_id, payment)`` (high risk), ``cancel_booking()``
    (high risk), ``get_itinerary()``.
Observation
    Paginated search results (``page_size`` flights a page, with no page count:
    the agent cannot tell whether it has seen the best one), the balance once
    checked, the shortlist and the booking.  Fares can rise between the search
    and the booking; the agent learns it only when the booking is refused.
Progress
    0.2 results found; +0.1 the best valid flight has been seen; +0.1 balance
    known; +0.2 the best valid flight shortlisted (0.1 for another valid one);
    a correct booking makes 1.0.  A booking that breaks a constraint costs
    0.2 until cancelled; a valid but wrong booking (not the best, or the wrong
    payment) is stuck at 0.8 until cancelled and redone.
Termination
    Complete when the best valid flight is booked with the right payment.
    Infeasible (with ``infeasible_rate``) when no flight meets the constraints:
    the right move is to give up.
Faults
    Empty searches for the original dates (``empty_rate``), tool latency,
    failures and timeouts, and fares that rise at random simulated times (the
    ``disturbance`` wrapper adds more rises through the same ``disturb`` hook).
Version history
    v0: first version.
    v1: ``disturb`` (a fare rises) and ``violates`` (guardrail constraints)
    hooks; the same draws as v0, so v0 trajectories are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from environments.base import NoArgs, SimTask, ToolParams
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Action, ActionResult, Observation, PlanStep


class FlightBookingParams(BaseModel):
    """Parameters of ``flight_booking``: the flights, the goal's constraints and the faults."""

    model_config = ConfigDict(extra="forbid")

    n_flights: int = Field(12, ge=1, le=200)
    page_size: int = Field(4, ge=1)
    max_price: float = Field(600.0, gt=0)
    earliest_hour: int = Field(9, ge=0, le=23)
    empty_rate: float = Field(0.3, ge=0, le=1, description="chance next week's search is empty")
    infeasible_rate: float = Field(0.0, ge=0, le=1, description="chance no flight is valid")
    fare_change_rate: float = Field(
        0.001, ge=0, description="fare rises per simulated second, per flight"
    )
    tools: ToolParams = ToolParams()


# Tool argument schemas carry no docstring: pydantic would put it in the JSON schema
# sent to the LLM (its "description"), changing the constrained output format.
class SearchArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    range: Literal["next_week", "widened"]


class FilterArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    max_price: float = Field(gt=0)
    earliest_hour: int = Field(ge=0, le=23)


class BookArgs(BaseModel):  # noqa: D101
    model_config = ConfigDict(extra="forbid")
    flight_id: int = Field(ge=0)
    payment: Literal["points", "cash"]


@dataclass(slots=True)
class Flight:
    """One flight of the hidden world; ``seen_price`` is the fare the agent last read."""

    flight_id: int
    price: float
    hour: int
    points_cost: int
    seen_price: float | None = None


class FlightBooking(SimTask):
    """Search, compare and book a flight under price, time and payment constraints."""

    name = "flight_booking"
    Params = FlightBookingParams
    TOOLS = (
        ToolSpec("search_flights", "Search flights to Tokyo for a date range", SearchArgs),
        ToolSpec("next_page", "Show the next page of the last search", NoArgs),
        ToolSpec("check_points", "Read the points balance", NoArgs),
        ToolSpec("filter_flights", "Shortlist the best seen flight under constraints", FilterArgs),
        ToolSpec("book_flight", "Book a flight, paying with points or cash", BookArgs, "high"),
        ToolSpec("cancel_booking", "Cancel the current booking", NoArgs, "high"),
        ToolSpec("get_itinerary", "Read the current booking", NoArgs),
    )
    params: FlightBookingParams

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        p = self.params
        self.goal = (
            f"Book next week's cheapest flight to Tokyo under {p.max_price:.0f}, departing "
            f"at {p.earliest_hour:02d}:00 or later; pay with points if the balance allows."
        )
        # the calls the expert and the wrong moves make, built once (an Action sorts its
        # arguments; these were a tenth of a step): the parameters are fixed per task
        self._calls = {
            "cancel": Action.of("cancel_booking"),
            "itinerary": Action.of("get_itinerary"),
            "next_page": Action.of("next_page"),
            "check_points": Action.of("check_points"),
            "next_week": Action.of("search_flights", range="next_week"),
            "widened": Action.of("search_flights", range="widened"),
            "filter": Action.of(
                "filter_flights", max_price=p.max_price, earliest_hour=p.earliest_hour
            ),
            "filter_loose": Action.of(
                "filter_flights", max_price=p.max_price * 1.5, earliest_hour=6
            ),
        }
        self._bookings: dict[tuple[int, str], Action] = {}
        self._template = self._plan_template()
        self._handlers = {t.name: getattr(self, f"_tool_{t.name}") for t in self.TOOLS}
        self._clear()

    def _book(self, flight_id: int, payment: str) -> Action:
        """The call booking ``flight_id`` by ``payment`` (one object per pair)."""
        call = self._bookings.get((flight_id, payment))
        if call is None:
            call = Action.of("book_flight", flight_id=flight_id, payment=payment)
            self._bookings[flight_id, payment] = call
        return call

    # -- world ---------------------------------------------------------------
    def _clear(self) -> None:
        self.flights: list[Flight] = []
        self.week_empty = False
        self.range: str | None = None
        self.pages_seen = 0
        self.balance = 0
        self.points_known = False
        self.shortlist: int | None = None
        self.booking: tuple[int, str] | None = None
        self.fare_changed_seen = False
        self._best: int | None = None
        self._cache: tuple[float, Observation] | None = None

    def _reset_world(self) -> None:
        self._clear()
        p = self.params
        rng = self.rng
        n = p.n_flights
        prices = rng.uniform(0.55, 1.6, n) * p.max_price
        hours = rng.integers(5, 23, n)
        if rng.random() < p.infeasible_rate:
            hours = rng.integers(0, max(p.earliest_hour, 1), n)
        prices_list, hours_list = prices.tolist(), hours.tolist()  # the same floats, unboxed
        self.flights = [
            Flight(i, _whole(price), hour, int(price * 60))
            for i, (price, hour) in enumerate(zip(prices_list, hours_list, strict=True))
        ]
        self.week_empty = bool(rng.random() < p.empty_rate)
        best = self._best_valid()
        self._best = best.flight_id if best else None
        if best is not None:
            self.balance = int(best.points_cost * rng.uniform(0.6, 1.6))
        if p.fare_change_rate > 0:
            self.env.process(self._fares_drift())

    def _fares_drift(self) -> Any:
        """A world that changes: fares rise at random times, one flight at a time."""
        rng = self.rng
        total = self.params.fare_change_rate * len(self.flights)
        while True:
            yield self.env.timeout(float(rng.exponential(1.0 / total)))
            self.disturb(rng)

    def disturb(self, rng: np.random.Generator) -> str | None:
        """A fare rises by 10–50 % (a booked fare is locked)."""
        flight = self.flights[int(rng.integers(len(self.flights)))]
        if self.booking is not None and self.booking[0] == flight.flight_id:
            return None
        flight.price = _whole(flight.price * float(rng.uniform(1.1, 1.5)))
        best = self._best_valid()
        self._best = best.flight_id if best else None
        self._cache = None
        return f"fare of #{flight.flight_id} rose to {flight.price:.0f}"

    def violates(self, action: Action) -> str | None:
        """A booking of an unseen flight, or one whose seen fare or hour breaks the goal."""
        if action.tool != "book_flight":
            return None
        fid = int(action.arg("flight_id", -1))
        if not 0 <= fid < len(self.flights) or self.flights[fid].seen_price is None:
            return "books a flight not seen in the results"
        flight = self.flights[fid]
        if not self._valid_seen(flight):
            return "books a flight that breaks the price or time constraint"
        if self.points_known and action.arg("payment") != self._right_payment(fid):
            return "pays differently from what the points balance allows"
        return None

    def _valid(self, f: Flight) -> bool:
        return f.price <= self.params.max_price and f.hour >= self.params.earliest_hour

    def _best_valid(self) -> Flight | None:
        valid = [f for f in self.flights if self._valid(f)]
        return min(valid, key=lambda f: (f.price, f.flight_id)) if valid else None

    def _visible(self) -> list[Flight]:
        if self.range is None or (self.range == "next_week" and self.week_empty):
            return []
        return self.flights[: self.pages_seen * self.params.page_size]

    def _right_payment(self, flight_id: int) -> str:
        return "points" if self.balance >= self.flights[flight_id].points_cost else "cash"

    # -- tools ---------------------------------------------------------------
    def _apply(self, action: Action) -> ActionResult:
        self._cache = None
        result: ActionResult = self._handlers[action.tool](action)
        return result

    def _page_text(self) -> str:
        size = self.params.page_size
        page = self.flights[(self.pages_seen - 1) * size : self.pages_seen * size]
        for f in page:
            f.seen_price = f.price
        if not page:
            return "no more results"
        rows = "; ".join(f"#{f.flight_id} {f.hour:02d}:00 {f.price:.0f}" for f in page)
        return f"page {self.pages_seen}: {rows} (more may be available)"

    def _tool_search_flights(self, action: Action) -> ActionResult:
        self.range = str(action.arg("range"))
        if self.range == "next_week" and self.week_empty:
            self.pages_seen = 0
            return ActionResult(True, "no flights found for next week", 0.0, tokens=10)
        self.pages_seen = 1
        return ActionResult(True, self._page_text(), 0.0, tokens=40)

    def _tool_next_page(self, action: Action) -> ActionResult:
        if not self._visible():
            return ActionResult(False, "no search results to page", 0.0, "rejected")
        if self.pages_seen * self.params.page_size >= len(self.flights):
            return ActionResult(True, "no more results", 0.0, tokens=6)
        self.pages_seen += 1
        return ActionResult(True, self._page_text(), 0.0, tokens=40)

    def _tool_check_points(self, action: Action) -> ActionResult:
        self.points_known = True
        return ActionResult(True, f"points balance: {self.balance}", 0.0, tokens=8)

    def _tool_filter_flights(self, action: Action) -> ActionResult:
        max_price = float(action.arg("max_price"))
        earliest = int(action.arg("earliest_hour"))
        seen = [
            f
            for f in self._visible()
            if (f.seen_price or f.price) <= max_price and f.hour >= earliest
        ]
        if not seen:
            self.shortlist = None
            return ActionResult(True, "no seen flight matches", 0.0, tokens=8)
        best = min(seen, key=lambda f: (f.seen_price or f.price, f.flight_id))
        self.shortlist = best.flight_id
        self.fare_changed_seen = False
        return ActionResult(True, f"shortlisted #{best.flight_id}", 0.0, tokens=10)

    def _tool_book_flight(self, action: Action) -> ActionResult:
        if self.booking is not None:
            return ActionResult(False, "already booked: cancel first", 0.0, "rejected")
        fid = int(action.arg("flight_id"))
        if fid >= len(self.flights):
            return ActionResult(False, f"no flight #{fid}", 0.0, "rejected")
        flight = self.flights[fid]
        if flight.seen_price is not None and flight.price > flight.seen_price:
            self.fare_changed_seen = True
            flight.seen_price = flight.price
            if self.shortlist == fid:
                self.shortlist = None
            return ActionResult(
                False, f"fare of #{fid} changed to {flight.price:.0f}", 0.0, "rejected", 12
            )
        payment = str(action.arg("payment"))
        if payment == "points" and self.balance < flight.points_cost:
            return ActionResult(False, "not enough points", 0.0, "rejected", 8)
        self.booking = (fid, payment)
        text = f"booked #{fid} {flight.hour:02d}:00 {flight.price:.0f} by {payment}"
        return ActionResult(True, text, 0.0, tokens=14)

    def _tool_cancel_booking(self, action: Action) -> ActionResult:
        if self.booking is None:
            return ActionResult(False, "nothing to cancel", 0.0, "rejected")
        self.booking = None
        return ActionResult(True, "booking cancelled", 0.0, tokens=6)

    def _tool_get_itinerary(self, action: Action) -> ActionResult:
        return ActionResult(True, self.answer(), 0.0, tokens=14)

    # -- ground truth ----------------------------------------------------------
    def _score(self, best: int | None, right_payment: bool | None) -> float:
        """Progress from the state, given which flight counts as best."""
        visible = self._visible()
        score = 0.0
        if visible:
            score += 0.2
            if best is not None and best < len(visible):  # visible: flights[:k], id = index
                score += 0.1
        if self.points_known:
            score += 0.1
        if self.shortlist is not None and self._valid(self.flights[self.shortlist]):
            score += 0.2 if self.shortlist == best else 0.1
        if self.booking is not None:
            fid = self.booking[0]
            flight = self.flights[fid]
            if not self._valid(flight):
                return max(0.0, score - 0.2)
            paid_right = right_payment if right_payment is not None else True
            if fid == best and paid_right:
                return 1.0
            return 0.8
        return min(score, 0.8)

    @property
    def progress(self) -> float:
        """Ground-truth progress: results, the best flight seen, balance, shortlist; 1.0 booked."""
        return self._cached()[0]

    def observe(self) -> Observation:
        """Counts of results seen, whether the balance is known, and the booking.

        Its visible progress takes the best flight seen for the best one, so it
        overrates a search whose cheapest valid flight is on an unread page.
        """
        return self._cached()[1]

    def _cached(self) -> tuple[float, Observation]:
        """Progress and observation change only with the state: compute them once per change."""
        if self._cache is None:
            self._cache = (self._true_progress(), self._observation())
        return self._cache

    def _true_progress(self) -> float:
        right = None
        if self.booking is not None:
            right = self.booking[1] == self._right_payment(self.booking[0])
        return self._score(self._best, right)

    @property
    def complete(self) -> bool:
        """Whether the best valid flight is booked with the right payment."""
        return self.progress >= 1.0

    @property
    def feasible(self) -> bool:
        """Whether any flight meets the price and departure constraints."""
        return self._best is not None

    def _observation(self) -> Observation:
        """What the agent can infer: it takes the best seen flight for the best one."""
        visible = self._visible()
        believed_best = self.shortlist
        if believed_best is None and visible:
            p = self.params
            top, earliest = p.max_price, p.earliest_hour
            # _valid_seen inlined: a method call per visible flight, once per state change
            seen_valid = [
                f
                for f in visible
                if (f.seen_price if f.seen_price is not None else f.price) <= top
                and f.hour >= earliest
            ]
            if seen_valid:
                believed_best = min(seen_valid, key=lambda f: f.seen_price or f.price).flight_id
        right = None
        if self.booking is not None and self.points_known:
            right = self.booking[1] == self._right_payment(self.booking[0])
        belief = self._score(believed_best, right)
        if self.booking is not None and self.booking[0] == believed_best and right is None:
            belief = 0.75  # paid without checking the balance: the agent knows it skipped a check
        text = f"results:{len(visible)} points:{self.points_known} booked:{self.booking}"
        return Observation(text, belief, self.fare_changed_seen, tokens=30)

    def _valid_seen(self, f: Flight) -> bool:
        price = f.seen_price if f.seen_price is not None else f.price
        return price <= self.params.max_price and f.hour >= self.params.earliest_hour

    # -- the expert ------------------------------------------------------------
    def expert_action(self) -> Action:
        """Search (widening if empty), page to the best flight, check points, shortlist, book.

        A wrong booking is cancelled first; a fare that moved since it was read
        is searched again.
        """
        p = self.params
        calls = self._calls
        complete = self.complete
        if self.booking is not None and not complete:
            return calls["cancel"]
        if complete:
            return calls["itinerary"]
        if not self._visible():
            widen = self.range == "next_week" and self.week_empty
            return calls["widened" if widen else "next_week"]
        best = self._best
        if best is None:
            return calls["itinerary"]  # nothing valid exists: nothing useful to do
        if best >= self.pages_seen * p.page_size:
            return calls["next_page"]
        if not self.points_known:
            return calls["check_points"]
        best_flight = self.flights[best]
        if best_flight.seen_price != best_flight.price:
            # a fare moved since it was read: search again to see current prices
            search = self.range or "next_week"
            return calls.get(search) or Action.of("search_flights", range=search)
        if self.shortlist != best:
            return calls["filter"]
        return self._book(best, self._right_payment(best))

    def wrong_actions(self) -> Sequence[Action]:
        """Repeat the search, recheck points, filter too loosely, or book the cheapest by cash."""
        calls = self._calls
        wrong = [calls["next_week"], calls["check_points"], calls["filter_loose"]]
        visible = self._visible()
        if visible:
            cheapest = min(visible, key=lambda f: f.price)
            wrong.append(self._book(cheapest.flight_id, "cash"))
        if self.booking is not None:
            wrong.append(calls["cancel"])
        return wrong

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Search (widen if empty), read the pages, check points, filter, book."""
        return self._template

    def _plan_template(self) -> tuple[PlanStep, ...]:
        p = self.params
        return (
            PlanStep(
                "search_flights",
                "search flights to Tokyo next week",
                condition="results are empty",
                fallback="widen the date range",
            ),
            PlanStep("next_page", "read the remaining result pages"),
            PlanStep(
                "check_points",
                "check the points balance",
                condition="balance is too low",
                fallback="show cash prices only",
            ),
            PlanStep(
                "filter_flights",
                f"filter: price < {p.max_price:.0f} and departure >= {p.earliest_hour:02d}:00",
            ),
            PlanStep("book_flight", "book the best option"),
        )

    def answer(self) -> str:
        """The booking made (flight, departure, fare, payment), or "no booking"."""
        if self.booking is None:
            return "no booking"
        fid, payment = self.booking
        f = self.flights[fid]
        return f"flight #{fid} at {f.hour:02d}:00 for {f.price:.0f}, paid by {payment}"


def _whole(price: float) -> float:
    """``round(price, 0)`` of a finite positive fare, exactly, without its decimal conversion.

    Both round half to even on the exact binary value, so the float is the same
    (tests/environments check it); ``round(x, 0)`` goes through a decimal string
    (about 1 µs, a dozen times per world), ``round(x)`` does not.
    """
    return float(round(price))
