"""Sub-commands of ``opar-sim``: one module each, listed in ``COMMANDS``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args, console) -> int``; raising ``UsageError`` or ``SpecError`` exits 2.
"""

from types import ModuleType

from opar_sim.commands import (  # LLM mode (issue 7)
    calibrate_cmd,
    doctor_cmd,
    list_cmd,
    replay_cmd,
    run_cmd,
)

COMMANDS: tuple[ModuleType, ...] = (run_cmd, list_cmd)
COMMANDS += (doctor_cmd, calibrate_cmd, replay_cmd)  # LLM mode (issue 7)

__all__ = ["COMMANDS"]
