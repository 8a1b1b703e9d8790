"""Sub-commands of ``opar-sim``: one module each, listed in ``COMMANDS``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args, console) -> int``; raising ``UsageError`` or ``SpecError`` exits 2.
"""

from types import ModuleType

from opar_sim.cli.commands import (
    ablate_cmd,
    advise_cmd,
    calibrate_cmd,
    claims_cmd,
    compare_cmd,
    detectors_cmd,
    diff_cmd,
    doctor_cmd,
    export_cmd,
    init_cmd,
    list_cmd,
    plot_cmd,
    refit_cmd,
    relay_cmd,
    replay_cmd,
    report_cmd,
    run_cmd,
    shootout_cmd,
    sprt_cmd,
    study_cmd,
    sweep_cmd,
    traces_cmd,
    tune_cmd,
)

COMMANDS: tuple[ModuleType, ...] = (
    run_cmd,
    sweep_cmd,
    tune_cmd,
    relay_cmd,
    compare_cmd,
    plot_cmd,
    report_cmd,
    export_cmd,
    list_cmd,
    doctor_cmd,
    calibrate_cmd,
    replay_cmd,
    advise_cmd,
    study_cmd,
    shootout_cmd,
    ablate_cmd,
    claims_cmd,
    refit_cmd,
    traces_cmd,
    diff_cmd,
    init_cmd,
    sprt_cmd,
    detectors_cmd,
)

__all__ = ["COMMANDS"]
