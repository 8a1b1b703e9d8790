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
    Command("run", "run an experiment spec and write a run directory"),
    Command("sweep", "run a parameter grid ([sweep] table) on common random numbers"),
    Command(
        "tune",
        "tune controller gains in R replicates, race them against the spec's own and recommend "
        "new gains only when they beat them held out",
    ),
    Command(
        "relay", "relay test on the plant task: K_u, P_u, Ziegler-Nichols and Tyreus-Luyben gains"
    ),
    Command(
        "compare",
        "run several controllers on the same seeds, print one table and write the figures",
    ),
    Command("plot", "rebuild the figures of a run directory (PNG and SVG) without rerunning"),
    Command(
        "report", "write one self-contained HTML page (figures, tables, spec) for a run directory"
    ),
    Command("export", "write a run's episodes as OpenTelemetry/OpenInference spans (OTLP JSON)"),
    Command(
        "list",
        "show the registered tasks, controllers, wrappers, agents, backends, guards and studies",
    ),
    Command("doctor", "check the configured LLM backends (Ollama reachable, models present)"),
    Command(
        "calibrate",
        "fit the simulated agent to a record (LLM run or imported) and check it on held-out tasks",
    ),
    Command(
        "replay", "re-decide a recorded run under another controller, without calling the model"
    ),
    Command(
        "advise",
        "the cap that keeps a share of the successes, and whether restarting beats continuing",
    ),
    Command("study", "run a two-arm memory study: rebound (compression) or learning (Reflexion)"),
    Command(
        "shootout",
        "tune every controller R times on equal terms, rank them on held-out seeds by replicates "
        "(ties as ties)",
    ),
    Command(
        "ablate",
        "switch the PID's terms off one by one (P, PI, PD, I; settle 1 or 2), paired against it",
    ),
    Command(
        "claims",
        "regenerate every number the docs state (docs/results.md), with intervals and verdicts",
    ),
    Command(
        "refit",
        "re-fit every controller's defaults on the tuning seed and check them on held-out seeds",
    ),
    Command("traces", "import recorded agent runs (tau-bench, OpenAI chat) into a run directory"),
    Command(
        "diff",
        "compare two run directories per controller (B - A, paired on the episodes both hold)",
    ),
    Command("init", "write a new task or controller module with its test (NAME.py, test_NAME.py)"),
    Command(
        "sprt",
        "calibrate the sprt stop on tuning seeds; measure its false-abandon curve and token saving",
    ),
    Command(
        "detectors",
        "score the stall and loop detectors (precision, recall, delay) against the stuck truth",
    ),
)

__all__ = ["COMMANDS", "Command"]
