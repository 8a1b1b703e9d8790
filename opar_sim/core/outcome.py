"""The one outcome judge (docs/design.md §2): how an episode stopped, and the world, to its outcome.

Every engine hands the judge the same four things about an episode's end:

- its ``Ending``: a TERMINATE (the controller's, or a guard's in its name), an
  error with its reason (``invalid_format``, ``backend_unavailable``, ...) or a
  truncation with its reason (``max_steps``, ``time``, ``tokens``, a guard's);
- whether the task is complete, from the ground truth at the end;
- whether the final TERMINATE gave up (``Decision.give_up``) rather than
  claimed completion;
- whether the task was still feasible.

A TERMINATE is judged from the world first and the claim second (``TERMINATE_TABLE``,
the rows of ``Outcome``'s table); an error or a truncation is its own label,
whatever the world.  ``judge`` is the scalar form (the SimPy loop, replay);
``judge_array`` the array form of the lockstep batch engine, a lookup in the
labels ``judge`` gives for every combination, so the two cannot disagree.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from opar_sim.core.types import Outcome, outcome_label

TERMINATE_TABLE: dict[tuple[bool, bool, bool], Outcome] = {
    # (complete, give_up, feasible) -> outcome of a TERMINATE
    (True, False, True): Outcome.SUCCESS,  # a done task is a success, whatever was claimed:
    (True, False, False): Outcome.SUCCESS,  # the world's final state is what a benchmark checks
    (True, True, True): Outcome.SUCCESS,
    (True, True, False): Outcome.SUCCESS,
    (False, True, True): Outcome.ABANDONED,  # gave up on a feasible task
    (False, True, False): Outcome.GAVE_UP,  # gave up on an infeasible one: correct abandonment
    (False, False, True): Outcome.PREMATURE,  # claimed completion, not complete
    (False, False, False): Outcome.PREMATURE,
}


@dataclass(frozen=True, slots=True)
class Ending:
    """How an episode stopped, before the world is read: TERMINATE, an error or a truncation.

    Exactly one of the three is set; an error wins over a truncation (an
    aborted model call also leaves the episode's clock short of its end).
    """

    terminated: bool = False
    error: str | None = None  # the reason of an ``error:<reason>`` outcome
    truncated: str | None = None  # the reason of a ``truncated:<reason>`` outcome

    def __post_init__(self) -> None:
        if not (self.terminated or self.error or self.truncated):
            raise ValueError("an Ending is a TERMINATE, an error or a truncation")
        if self.terminated and (self.error or self.truncated):
            raise ValueError("a TERMINATE ending has no error or truncation reason")


TERMINATED = Ending(terminated=True)
INVALID_FORMAT = Ending(error="invalid_format")  # three invalid outputs in a row
MAX_STEPS = Ending(truncated="max_steps")


def judge(ending: Ending, complete: bool, give_up: bool, feasible: bool) -> str:
    """The outcome label of one episode (``success``, ``truncated:max_steps``, ...).

    Args:
        ending: How the episode stopped.
        complete: Whether the task is complete at the end (ground truth).
        give_up: Whether the final TERMINATE gave up rather than claimed completion
            (read only for a TERMINATE).
        feasible: Whether the task could still be done (read only for a give-up).

    Returns:
        The label written to episodes.jsonl.
    """
    if ending.terminated:
        return TERMINATE_TABLE[(bool(complete), bool(give_up), bool(feasible))].value
    if ending.error:
        return outcome_label(Outcome.ERROR, ending.error)
    return outcome_label(Outcome.TRUNCATED, ending.truncated)


_COMBINATIONS = tuple(itertools.product((False, True), repeat=3))  # (complete, give_up, feasible)


def judge_array(
    code: npt.ArrayLike,
    endings: Sequence[Ending | None],
    complete: npt.ArrayLike,
    give_up: npt.ArrayLike,
    feasible: npt.ArrayLike,
) -> npt.NDArray[np.object_]:
    """``judge`` on N episodes at once (the lockstep batch engine).

    Args:
        code: Each episode's ending, as an index into ``endings``.
        endings: The engine's ending codes (None: a code no finished episode has,
            such as "still running").
        complete: Whether each task is complete at the end.
        give_up: Whether each final TERMINATE gave up.
        feasible: Whether each task could still be done.

    Returns:
        The outcome labels (an object array of ``str``), in episode order.

    Raises:
        ValueError: when an episode's code is None in ``endings``.
    """
    labels = np.array(
        [
            judge(ending, *combination) if ending is not None else None
            for ending in endings
            for combination in _COMBINATIONS
        ],
        dtype=object,
    )
    index = np.asarray(code, np.int64) * len(_COMBINATIONS)
    index += 4 * np.asarray(complete, bool) + 2 * np.asarray(give_up, bool)
    index += np.asarray(feasible, bool)
    judged = labels[index]
    if (judged == None).any():  # noqa: E711 (elementwise on an object array)
        raise ValueError("an episode ended with a code that is no Ending (still running?)")
    return np.asarray(judged)
