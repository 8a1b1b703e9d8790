"""The files ``opar-sim init`` writes: a working task or controller module and its test.

Each template is a ``string.Template`` (``$name``, ``$cls``); the generated
test imports the module from its own directory, checks it with the project's
conformance checker and runs a short experiment through the Python API.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template
from typing import Literal

Kind = Literal["task", "controller"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

CONTROLLER = Template('''\
"""$cls: a Reflect decision law for opar-sim.

Made by ``opar-sim init $name --kind controller``.  Run it without packaging:

    opar-sim run experiments/flight_booking.toml --controller $name.py:$cls
    opar-sim compare experiments/flight_booking.toml --controllers pid,$name.py:$cls

Its keyword arguments are the spec's ``[controller.params]``.
"""

from __future__ import annotations

from opar_sim import ControlSignal, Decision, Evaluation
from opar_sim.core.controller import ReflectContext


class $cls:
    """Stop once the agent is sure enough; replan when the last action did nothing."""

    name = "$name"

    def __init__(self, complete: float = 0.9, stuck: float = 0.3) -> None:
        if not 0.0 <= stuck < complete <= 1.0:
            raise ValueError("needs 0 <= stuck < complete <= 1")
        self.complete = complete
        self.stuck = stuck

    def reset(self) -> None:
        """Forget the episode (this law keeps no state)."""

    def decide(self, evaluation: Evaluation, ctx: ReflectContext) -> Decision:
        """TERMINATE at delta_task >= complete, REPLAN at delta_act < stuck, else CONTINUE."""
        terms = {"delta_task": evaluation.delta_task, "delta_act": evaluation.delta_act}
        if evaluation.delta_task >= self.complete:
            return Decision(ControlSignal.TERMINATE, "sure enough", terms)
        if evaluation.delta_act < self.stuck and ctx.plan_age > 1:
            return Decision(ControlSignal.REPLAN, "the last action did nothing", terms)
        return Decision(ControlSignal.CONTINUE, "keep going", terms)
''')

RUN_WITHOUT_PYTEST = """

if __name__ == "__main__":  # `python test_$name.py`: these tests without pytest
    import inspect
    import tempfile

    for name, test in list(globals().items()):
        if name.startswith("test_") and callable(test):
            if "tmp_path" in inspect.signature(test).parameters:
                with tempfile.TemporaryDirectory() as folder:
                    test(Path(folder))
            else:
                test()
            print(f"ok {name}")
"""

CONTROLLER_TEST = Template(
    '''\
"""Tests of $cls (made by `opar-sim init`): the conformance check and a short run."""

from __future__ import annotations

import sys
from pathlib import Path

import controllers
import opar_sim

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from $name import $cls  # noqa: E402


def test_it_passes_the_controller_check():
    controllers.check_controller(lambda: $cls(), "$name")


def test_it_rejects_bad_parameters():
    try:
        $cls(complete=0.2, stuck=0.5)
    except ValueError as exc:
        assert "needs" in str(exc)
    else:
        raise AssertionError("bad parameters were accepted")


def test_it_runs_an_experiment(tmp_path):
    ref = f"{HERE / '$name.py'}:$cls"
    spec = {"name": "$name", "episodes": 10, "controller": {"name": ref}}
    run = opar_sim.run(spec, out=tmp_path / "run", figures=False)
    assert run.summary[ref]["episodes"] == 10
'''
    + RUN_WITHOUT_PYTEST
)

TASK = Template('''\
"""$cls: a task for opar-sim, made by ``opar-sim init $name --kind task``.

Goal
    Collect items 1..N in order, then finish.
Tools
    ``collect(item)`` collects an item (only the next one in order counts);
    ``finish()`` ends the task.
Observation
    How many items are collected and whether the last call counted.
Progress
    0.9 × collected / N, and 1.0 once finished with every item collected.
Termination
    Complete when finished with every item; finishing early leaves it
    infeasible (it cannot be completed any more).
Faults
    Tool latency, failures and timeouts from ``tools``.
Version history
    v0: first version.

Importing this module registers the task as ``$name``; a spec then names it
(``[task] name = "$name"``) in any process that imported it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

import environments
from environments import SimTask, ToolParams
from environments.base import NoArgs
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Action, ActionResult, Observation, PlanStep


class ${cls}Params(BaseModel):
    """Parameters of ``$name``: the number of items and the tools' timing."""

    model_config = ConfigDict(extra="forbid")

    items: int = Field(3, ge=1, le=50, description="items to collect")
    tools: ToolParams = ToolParams()


class CollectArgs(BaseModel):  # noqa: D101 (sent to an LLM as a JSON schema: no docstring)
    model_config = ConfigDict(extra="forbid")
    item: int


class $cls(SimTask):
    """Collect items 1..N in order, then finish."""

    name = "$name"
    Params = ${cls}Params
    TOOLS = (
        ToolSpec("collect", "Collect an item by number", CollectArgs),
        ToolSpec("finish", "Finish: every item is collected", NoArgs, risk="high"),
    )
    params: ${cls}Params

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self.goal = f"collect items 1 to {self.params.items}, then finish"
        self.collected = 0
        self.finished = False

    def _reset_world(self) -> None:
        self.collected = 0
        self.finished = False

    def _apply(self, action: Action) -> ActionResult:
        if self.finished:
            return ActionResult(False, "already finished", 0.0, "rejected")
        if action.tool == "finish":
            self.finished = True
            return ActionResult(True, f"finished with {self.collected} items", 0.0, tokens=8)
        item = int(str(action.arg("item")))
        if item == self.collected + 1:
            self.collected = item
            return ActionResult(True, f"collected item {item}", 0.0, tokens=8)
        return ActionResult(True, f"item {item} is not next", 0.0, tokens=8)

    def observe(self) -> Observation:
        """The count collected so far (exact: this task hides nothing but the future)."""
        text = f"collected {self.collected} of {self.params.items}"
        return Observation(text, self.progress, tokens=12)

    @property
    def progress(self) -> float:
        """0.9 of the share collected, 1.0 once finished with all of them."""
        return 1.0 if self.complete else 0.9 * self.collected / self.params.items

    @property
    def complete(self) -> bool:
        """Finished with every item collected."""
        return self.finished and self.collected == self.params.items

    @property
    def feasible(self) -> bool:
        """Finishing early cannot be undone."""
        return not self.finished or self.complete

    def expert_action(self) -> Action:
        """The next item, then finish."""
        if self.collected < self.params.items:
            return Action.of("collect", item=self.collected + 1)
        return Action.of("finish")

    def wrong_actions(self) -> Sequence[Action]:
        """Collect an item out of order, or finish early."""
        return (Action.of("collect", item=self.collected + 2), Action.of("finish"))

    def plan_template(self) -> tuple[PlanStep, ...]:
        """Each item in turn, then finish."""
        steps = [PlanStep("collect", f"collect item {i}") for i in range(1, self.params.items + 1)]
        return (*steps, PlanStep("finish", "finish"))

    def answer(self) -> str:
        """How far it got."""
        return f"{self.collected} items" + (", finished" if self.finished else "")


environments.register("$name", $cls)
''')

TASK_TEST = Template(
    '''\
"""Tests of $cls (made by `opar-sim init`): the conformance check and a short run."""

from __future__ import annotations

import sys
from pathlib import Path

import environments
import opar_sim

sys.path.insert(0, str(Path(__file__).resolve().parent))

from $name import $cls  # noqa: E402  (importing it registers "$name")


def test_it_passes_the_task_check():
    environments.check_task(lambda: environments.make("$name"))
    environments.check_task(lambda: $cls(items=5))


def test_the_expert_completes_it():
    task = $cls(items=2)
    assert task.expert_action().tool == "collect"


def test_it_runs_an_experiment(tmp_path):
    ref = f"{Path(__file__).resolve().parent / '$name.py'}:$cls"  # as a spec names it
    spec = {"name": "$name", "episodes": 10, "task": {"name": ref}}
    run = opar_sim.run(spec, out=tmp_path / "run", figures=False)
    assert run.summary["pid"]["episodes"] == 10
    assert run.summary["pid"]["success_rate"] > 0
'''
    + RUN_WITHOUT_PYTEST
)


def class_name(name: str) -> str:
    """``my_law`` -> ``MyLaw``."""
    return "".join(part.capitalize() for part in name.split("_") if part)


def check_name(name: str) -> None:
    """Raise ValueError unless ``name`` is a lower-case Python identifier, not a keyword."""
    if not _NAME.match(name) or keyword.iskeyword(name):
        raise ValueError(
            f"init: {name!r} is not a module name: use lower case letters, digits and _, "
            "starting with a letter (e.g. my_law)"
        )


def scaffold(name: str, kind: Kind, directory: Path) -> list[Path]:
    """Write ``NAME.py`` and ``test_NAME.py`` into ``directory``; refuse to overwrite.

    Args:
        name: The module name (and the registered name of a task).
        kind: ``task`` or ``controller``.
        directory: Where the files go (created if missing).

    Returns:
        The two paths written.

    Raises:
        ValueError: for a bad name or when a file exists already.
    """
    check_name(name)
    module, test = (TASK, TASK_TEST) if kind == "task" else (CONTROLLER, CONTROLLER_TEST)
    files = {directory / f"{name}.py": module, directory / f"test_{name}.py": test}
    for path in files:
        if path.is_symlink():  # a dangling link too: writing would follow it
            raise ValueError(f"init: {path} is a symbolic link; choose another name or directory")
        if path.exists():
            raise ValueError(f"init: {path} exists; choose another name or directory")
    directory.mkdir(parents=True, exist_ok=True)
    for path, template in files.items():
        # "x": created here or refused, never through a link planted since the check
        with path.open("x", encoding="utf-8") as out:
            out.write(template.substitute(name=name, cls=class_name(name)))
    return list(files)
