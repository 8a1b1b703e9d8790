"""Sub-commands of ``opar-sim``: one module each, listed in ``COMMANDS``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args, console) -> int``; raising ``UsageError`` or ``SpecError`` exits 2.
"""

from types import ModuleType

from opar_sim.commands import list_cmd, relay_cmd, run_cmd, sweep_cmd, tune_cmd

COMMANDS: tuple[ModuleType, ...] = (run_cmd, sweep_cmd, tune_cmd, relay_cmd, list_cmd)

__all__ = ["COMMANDS"]
