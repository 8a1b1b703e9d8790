"""Sub-commands of ``opar-sim``: one module each, listed in ``COMMANDS``.

A command module ``<name>_cmd`` defines ``NAME``, ``HELP``, ``add_arguments(parser)``
and ``run(args, console) -> int``; raising ``UsageError`` or ``SpecError`` exits 2.

``COMMANDS`` names each command and its one-line help without importing its
module: ``opar-sim --help`` lists them all and loads none, and a run loads only
its own command (``Command.load``).  ``tests/cli/test_startup.py`` checks that the
table agrees with each module's ``NAME`` and ``HELP``.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import NamedTuple


class Command(NamedTuple):
    """A sub-command: its name and help, and the module that implements it."""

    name: str
    help: str
    group: str = "project"

    @property
    def module(self) -> str:
        """The implementing module's dotted name."""
        return f"{__name__}.{self.name}_cmd"

    def load(self) -> ModuleType:
        """Import the command's module.

        Returns:
            The module (``add_arguments``, ``run``).
        """
        return importlib.import_module(self.module)


COMMANDS: tuple[Command, ...] = (
    Command("run", "run an experiment spec and write a run directory", group="everyday"),
    Command(
        "glossary",
        "what each word the outputs use means (δ_task, pace, confirm, pass^k, ...)",
        group="everyday",
    ),
    Command(
        "sweep", "run a parameter grid ([sweep] table) on common random numbers", group="everyday"
    ),
    Command(
        "tune",
        "tune controller gains in R replicates, race them against the spec's own and recommend "
        "new gains only when they beat them held out",
        group="everyday",
    ),
    Command(
        "relay",
        "relay test on the plant task: K_u, P_u, Ziegler-Nichols and Tyreus-Luyben gains",
        group="project",
    ),
    Command(
        "compare",
        "run several controllers on the same seeds, print one table and write the figures",
        group="everyday",
    ),
    Command(
        "plot",
        "rebuild the figures of a run directory (PNG and SVG) without rerunning",
        group="everyday",
    ),
    Command(
        "report",
        "write one self-contained HTML page (figures, tables, spec) for a run directory",
        group="everyday",
    ),
    Command(
        "export",
        "write a run's episodes as OpenTelemetry/OpenInference spans (OTLP JSON)",
        group="project",
    ),
    Command(
        "list",
        "show the registered tasks, controllers, wrappers, agents, backends, guards and studies",
        group="everyday",
    ),
    Command(
        "doctor",
        "check the configured LLM backends (Ollama reachable, models present)",
        group="real agents",
    ),
    Command(
        "calibrate",
        "fit the simulated agent to a record (LLM run or imported) and check it on held-out tasks",
        group="real agents",
    ),
    Command(
        "replay",
        "re-decide a recorded run under another controller, without calling the model",
        group="real agents",
    ),
    Command(
        "advise",
        "the cap that keeps a share of the successes, and whether restarting beats continuing",
        group="real agents",
    ),
    Command(
        "study",
        "run a two-arm memory study: rebound (compression) or learning (Reflexion)",
        group="studies",
    ),
    Command(
        "shootout",
        "tune every controller R times on equal terms, rank them on held-out seeds by replicates "
        "(ties as ties)",
        group="studies",
    ),
    Command(
        "ablate",
        "switch the PID's terms off one by one (P, PI, PD, I; settle 1 or 2), paired against it",
        group="studies",
    ),
    Command(
        "claims",
        "regenerate every number the docs state (docs/results.md), with intervals and verdicts",
        group="studies",
    ),
    Command(
        "refit",
        "re-fit every controller's defaults on the tuning seed and check them on held-out seeds",
        group="project",
    ),
    Command(
        "traces",
        "import recorded agent runs (tau-bench, OTel, Langfuse, Inspect, ...) into a run directory",
        group="real agents",
    ),
    Command(
        "diff",
        "compare two run directories per controller (B - A, paired on the episodes both hold)",
        group="project",
    ),
    Command(
        "init",
        "write a new task or controller module with its test (NAME.py, test_NAME.py)",
        group="project",
    ),
    Command(
        "sprt",
        "calibrate the sprt stop on tuning seeds; measure its false-abandon curve and token saving",
        group="studies",
    ),
    Command(
        "detectors",
        "score the stall and loop detectors (precision, recall, delay) against the stuck truth",
        group="studies",
    ),
)

GROUPS = ("everyday", "studies", "real agents", "project")
"""The order ``opar-sim --help`` lists the commands' groups in."""

__all__ = ["COMMANDS", "GROUPS", "Command"]
