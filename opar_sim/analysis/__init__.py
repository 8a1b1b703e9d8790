"""Re-export shim (docs/design.md §6): the run analysis now lives in ``opar_sim.measure.run``.

``analyze``, ``RunAnalysis``, ``analyze_dir`` and ``analysis_cost`` (the CPU
time of one analysis per episode, which the benchmarks report) are loaded on
first use, so a module that needs only a small part of the package
(``frames``, ``stats``) does not load the run analysis with it.
"""

from typing import Any

__all__ = ["AnalysisCost", "RunAnalysis", "analysis_cost", "analyze", "analyze_dir"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from opar_sim.measure import run

        return getattr(run, name)
    raise AttributeError(f"module 'opar_sim.analysis' has no attribute {name!r}")
