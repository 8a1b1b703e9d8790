"""A law with no array twin, run row by row through its scalar reference (``ScalarRows``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from controllers.batch.protocol import CONTINUE, REPLAN, TERMINATE, Reading, Signals
from opar_sim.core.controller import Controller, ReflectContext
from opar_sim.core.types import ControlSignal, Evaluation

_CODES = {ControlSignal.CONTINUE: CONTINUE, ControlSignal.REPLAN: REPLAN}


class ScalarRows:
    """A law with no batch twin, run through its scalar reference: one instance per episode.

    At each Reflect every live row's evaluation and loop context are rebuilt as the scalar
    types and handed to that row's own instance, so the decisions are the scalar law's by
    construction; what the engine does not model is not in them: the critique text is
    empty and there is no memory note (the simulated agent's critique says only whether
    the step made progress, which δ_act already tells).  It costs the scalar law's
    ``decide`` per Reflect (plus about a microsecond to build its arguments), so the engine
    is no longer array-speed for such a law, only for the task and the agent.
    """

    needs = ("missing", "context")  # the engine fills ``missing``, ``step`` and ``now``

    def __init__(self, make: Callable[[], Controller], first: Controller) -> None:
        """Keep the factory that builds one more instance of the law.

        Args:
            make: Builds a fresh, bound instance (the build's controller factory).
            first: One instance already built (kept: it serves the first row).
        """
        self.make = make
        self.name = first.name
        self.pool: list[Controller] = [first]  # kept for the next chunk
        self.laws = np.empty(0, object)

    def reset(self, n: int) -> None:
        """``n`` instances, each ``reset()``, one per row.

        ``laws`` is an object array so that the engine's compaction (``take_rows``) drops
        the finished rows' instances with the rows of every other array.
        """
        while len(self.pool) < n:
            self.pool.append(self.make())
        self.laws = np.empty(n, object)
        for k, law in enumerate(self.pool[:n]):
            law.reset()
            self.laws[k] = law

    def decide(self, m: np.ndarray, r: Reading) -> Signals:
        """Each row of ``m`` decided by its own scalar instance."""
        if r.now is None or r.missing is None:
            raise ValueError("a law run row by row reads the step's clock and what is missing")
        signal = np.full(len(m), CONTINUE, np.int8)
        give_up = np.zeros(len(m), bool)
        rows = np.flatnonzero(m).tolist()
        # the rows' fields as Python scalars, converted once per Reflect, not per element
        fields = zip(
            r.delta_task[rows].tolist(),
            r.delta_act[rows].tolist(),
            r.delta_plan[rows].tolist(),
            r.confidence[rows].tolist(),
            r.missing[rows].tolist(),
            r.now[rows].tolist(),
            r.dt[rows].tolist(),
            r.plan_age[rows].tolist(),
            r.plan_exhausted[rows].tolist(),
            r.replans[rows].tolist(),
            strict=True,
        )
        laws, step, goal = self.laws, r.step, ("remaining goal",)
        for k, (task, act, plan, conf, missing, now, dt, age, exhausted, replans) in zip(
            rows, fields, strict=True
        ):
            ev = Evaluation(task, act, plan, conf, "", goal if missing else ())
            d = laws[k].decide(ev, ReflectContext(step, now, dt, age, exhausted, replans))
            if d.signal is ControlSignal.TERMINATE:
                signal[k] = TERMINATE
                give_up[k] = d.give_up
            else:
                signal[k] = _CODES[d.signal]
        return signal, give_up
