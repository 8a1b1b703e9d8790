"""Array twins of tasks: the protocol the lockstep batch engine drives, and their registry.

A task's *array twin* holds N hidden worlds of the task in arrays (one row per
episode) and answers, for every row at once, what the noisy-expert agent asks of
the scalar task (``environments.base.SimTask``): the expert's action and a wrong
one, the effect of a delivered tool call, the hidden progress, the progress the
agent can see, the plan's length and the observation's size.  The twin is
registered beside its task (``register_twin(name, factory)`` in
``environments``), keyed by the task's name; the engine looks it up here and
imports no task.  A factory receives the built (possibly wrapped) scalar task
and returns its twin, or raises ``TwinUnsupported`` naming what it lacks (a
wrapper it does not model, say).

Actions are tuples of arrays (a tool code first, then the task's arguments);
the engine picks the expert's or the wrong one per row and hands the tuple back
to ``apply``.  For the step rows a twin names an action: ``action_key`` turns
the tuple into one integer per row (read before the call changes the world)
and ``label`` turns a key into the scalar task's own label and tool name (the
``action`` and ``tool`` of a SimPy step row); ``call_state`` tells which call
timed out and which was delivered.  Draws come from the generator the engine passes (world draws) or
as arrays it passes (the agent's picks), so a test can replay recorded draws.

The generic helpers of every twin live here too: ``first_match`` (a cheap
``np.select`` on codes) and ``take_rows`` (drop finished rows).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

Action = tuple[np.ndarray, ...]


class TwinUnsupported(ValueError):
    """A task (or a wrapper or parameter of it) that has no array twin."""


class ToolTiming(Protocol):
    """The tool timing of ``SimTask.execute``: log-normal latency, timeout, failure."""

    @property
    def latency_median(self) -> float:
        """Median latency, seconds."""
        ...

    @property
    def latency_sigma(self) -> float:
        """Log-normal spread of the latency."""
        ...

    @property
    def timeout(self) -> float:
        """Per-call timeout, seconds."""
        ...

    @property
    def failure_rate(self) -> float:
        """Chance a delivered call fails."""
        ...


class TaskTwin(Protocol):
    """N worlds of one task advancing together; every method works on all rows at once."""

    n: int  # rows now (the engine drops finished ones with ``take``)

    @property
    def plan_steps(self) -> int | np.ndarray:
        """len(task.plan_template()): one number, or one per row."""
        ...

    @property
    def observation_tokens(self) -> int:
        """``Observation.tokens`` of the task."""
        ...

    @property
    def tools(self) -> ToolTiming:
        """The tool timing of the task's calls (``SimTask.execute``)."""
        ...

    def reset(self, n: int, rng: np.random.Generator) -> None:
        """Draw ``n`` hidden worlds, one per row."""
        ...

    def sync(self, now: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> None:
        """Bring the rows of ``mask`` up to their clocks ``now`` (disturbances due by then)."""
        ...

    def world_changed(self) -> np.ndarray:
        """Whether each row's observation reports a world change (``Observation.world_changed``)."""
        ...

    def progress(self) -> np.ndarray:
        """Ground-truth progress of every row."""
        ...

    def complete(self) -> np.ndarray:
        """Whether each row's goal is met."""
        ...

    def feasible(self) -> np.ndarray:
        """Whether each row's goal can still be met."""
        ...

    def visible_progress(self) -> np.ndarray:
        """The progress each row's agent can infer from its observation (a new array)."""
        ...

    def expert(self) -> Action:
        """The expert's action of every row."""
        ...

    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """One of the task's wrong actions per row, chosen by ``pick`` (uniforms in [0, 1)).

        A row with k wrong actions takes number ``int(pick * k)`` of the scalar
        task's list; ``need`` marks the rows that take it (others may skip dear work).
        """
        ...

    def act(self, expert: np.ndarray, pick: np.ndarray, need: np.ndarray) -> Action:
        """The expert's action where ``expert``, else the wrong one ``pick`` chooses, per row.

        ``SimTaskTwin`` combines ``expert`` and ``wrong``; a twin may do it in one pass.
        """
        ...

    def start_call(
        self,
        mask: np.ndarray,
        action: Action,
        latency: np.ndarray,
        failure: np.ndarray,
        now: np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """Start the tool calls of the rows of ``mask``; the seconds each row's agent waits.

        Args:
            mask: The rows that call a tool.
            action: Each row's action.
            latency: A standard normal per row (the tool latency's, ``SimTask.execute``).
            failure: A uniform per row (the tool failure's).
            now: Each row's clock at the call.
            rng: The batch's generator (a wrapper's own draws).
        """
        ...

    def finish_call(
        self, mask: np.ndarray, action: Action, now: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """The calls of the rows of ``mask`` return at ``now``: (ok, result tokens) per row."""
        ...

    def call_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's last call (``start_call``'s): (timed out, delivered: arrived, not failed)."""
        ...

    def action_key(self, action: Action) -> np.ndarray:
        """An integer per row naming its action as the scalar task would (its ``label``).

        Read when the action is chosen, before its call changes the world; it draws nothing.
        """
        ...

    def label(self, key: int) -> tuple[str, str]:
        """The scalar task's ``Action.label()`` and tool name of the action ``key`` names."""
        ...

    def take(self, keep: np.ndarray) -> None:
        """Keep only the rows ``keep``, in order."""
        ...

    def answer_fields(self) -> dict[str, np.ndarray]:
        """What each row's final answer is made of, as arrays (read when rows end)."""
        ...

    def features(self) -> dict[str, np.ndarray]:
        """Each world's known features (``task_features``), by name; a task without any: {}."""
        ...

    def answers(self, fields: dict[str, np.ndarray]) -> list[str]:
        """The final answers (``task.answer()``) from ``answer_fields`` of ended rows."""
        ...


class SimTaskTwin(ABC):
    """What the twins of ``SimTask``s share: the tool call of ``SimTask.execute``.

    A call waits a log-normal latency (``tools``), cut at the tool's timeout (a
    timeout, no effect); an arrived call fails at ``failure_rate``, else takes
    effect (``apply``).  Subclasses define the world; ``after_call`` is the hook of
    what happens when any call returns (an observation wrapper's).
    """

    n: int
    tools: ToolTiming

    def sync(self, now: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> None:
        """Nothing changes the world by itself (subclasses with disturbances override)."""
        return  # a hook: the default does nothing

    def features(self) -> dict[str, np.ndarray]:
        """No known features (a task with some overrides)."""
        return {}

    @abstractmethod
    def apply(self, mask: np.ndarray, action: Action) -> tuple[np.ndarray, np.ndarray]:
        """Run the delivered calls of the rows of ``mask``: (ok, result tokens) per row."""

    @abstractmethod
    def expert(self) -> Action:
        """The expert's action of every row."""

    @abstractmethod
    def wrong(self, pick: np.ndarray, need: np.ndarray) -> Action:
        """One of the task's wrong actions per row, chosen by ``pick`` (``TaskTwin.wrong``)."""

    def act(self, expert: np.ndarray, pick: np.ndarray, need: np.ndarray) -> Action:
        """The expert's action where ``expert``, else the wrong one ``pick`` chooses, per row."""
        right, wrong = self.expert(), self.wrong(pick, need)
        return tuple(np.where(expert, e, w) for e, w in zip(right, wrong, strict=True))

    def after_call(self, mask: np.ndarray, now: np.ndarray, rng: np.random.Generator) -> None:
        """What happens when the calls of the rows of ``mask`` return, whatever their result."""
        return  # a hook: the default does nothing

    def start_call(
        self,
        mask: np.ndarray,
        action: Action,
        latency: np.ndarray,
        failure: np.ndarray,
        now: np.ndarray,
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``SimTask.execute``'s wait: the latency, or the timeout when it is longer."""
        tp = self.tools
        seconds = tp.latency_median * np.exp(tp.latency_sigma * latency)
        timeout = self._timeout = seconds > tp.timeout
        self._deliver = ~timeout & (failure >= tp.failure_rate)
        return np.minimum(seconds, tp.timeout)

    def call_state(self) -> tuple[np.ndarray, np.ndarray]:
        """The last call's (timed out, delivered) per row (``start_call``'s)."""
        return self._timeout, self._deliver

    def finish_call(
        self, mask: np.ndarray, action: Action, now: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        """The arrived calls that neither timed out nor failed take effect now."""
        delivered = mask & self._deliver
        self.sync(now, delivered, rng)
        ok, tokens = self.apply(delivered, action)  # both zero outside delivered
        self.after_call(mask, now, rng)
        return ok, tokens


TwinFactory = Callable[[Any], TaskTwin]
# a factory, or where to import it from ("module:Class.method"): a twin's module may import
# what a run on the SimPy engine never needs (Numba), so it is imported on first use
TWINS: dict[str, TwinFactory | str] = {}


def register_twin(name: str, factory: TwinFactory | str) -> None:
    """Register the array twin of task ``name`` (re-registering replaces it).

    Args:
        name: The task's registered name.
        factory: Builds the twin from the built scalar task (wrapped or not); raises
            ``TwinUnsupported`` naming what it does not model.  Or its import path,
            ``"module:attribute.path"``, imported when the twin is first asked for.
    """
    TWINS[name] = factory


def _factory(name: str) -> TwinFactory | None:
    """The registered factory of task ``name``, imported now if it was given by path."""
    factory = TWINS.get(name)
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        found: Any = importlib.import_module(module)
        for part in attribute.split("."):
            found = getattr(found, part)
        factory = TWINS[name] = found
    return factory


def twin_of(task: Any) -> TaskTwin:
    """The array twin of a built task.

    Args:
        task: A built task (its ``name`` keys the registry).

    Returns:
        The twin, to ``reset`` before use.

    Raises:
        TwinUnsupported: If no twin is registered for the task, or the twin does not model
            something of it.
    """
    name = str(getattr(task, "name", type(task).__name__))
    factory = _factory(name)
    if factory is None:
        have = ", ".join(repr(n) for n in sorted(TWINS)) or "none"
        raise TwinUnsupported(f"no vectorised model of task {name!r} (twins: {have})")
    return factory(task)


def wrapper_stack(task: Any) -> tuple[list[tuple[str, Any]], Any]:
    """The wrappers around ``task``, innermost first, as (name, params), and the inner task.

    Args:
        task: A built task, wrapped or not (a wrapper has ``wrapper_name`` and ``task``).

    Returns:
        ([(wrapper name, its params), ...] innermost first, the innermost task).
    """
    stack: list[tuple[str, Any]] = []
    while hasattr(task, "wrapper_name") and hasattr(task, "task"):
        stack.append((str(task.wrapper_name), task.params))
        task = task.task
    stack.reverse()
    return stack, task


def unwrapped(task: Any, name: str, kind: type) -> Any:
    """The scalar task inside ``task`` for a twin that models no wrappers and only ``kind``.

    Args:
        task: A built task, wrapped or not.
        name: The task's name, for the refusal.
        kind: The one task class the twin models (exactly: not a subclass).

    Returns:
        The task itself.

    Raises:
        TwinUnsupported: If the task is wrapped or is not exactly ``kind``.
    """
    stack, inner = wrapper_stack(task)
    if stack:
        names = ", ".join(wrapper for wrapper, _ in stack)
        raise TwinUnsupported(f"{name}'s twin models no task wrappers ({names})")
    if type(inner) is not kind:
        raise TwinUnsupported(f"no vectorised model of {type(inner).__name__}")
    return inner


def first_match(conditions: list[np.ndarray], choices: list[Any], default: int) -> np.ndarray:
    """``np.select`` (the first true condition's choice, else ``default``) as integer codes.

    Written from the last condition to the first, one ``np.where`` on int8 codes
    each (no index arrays): several times cheaper than ``np.select`` on long arrays.

    Args:
        conditions: Boolean arrays, one per choice.
        choices: A code (int) or an array of codes per condition.
        default: The code where no condition holds.

    Returns:
        The chosen codes (int8).
    """
    out = np.full(len(conditions[0]), default, np.int8)
    for condition, choice in zip(reversed(conditions), reversed(choices), strict=True):
        pick = choice.astype(np.int8) if isinstance(choice, np.ndarray) else np.int8(choice)
        out = np.where(condition, pick, out)
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
            setattr(obj, name, value.take(keep, axis=0))  # several times faster on 2-D
