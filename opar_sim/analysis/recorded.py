"""A recorded run read back whole, for calibrate and replay (LLM runs are small).

opar_sim.experiment.rundir streams large runs for the analysis commands; this module holds a
run's rows in memory, with its model calls, which calibration needs together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opar_sim.experiment.build import parse_spec
from opar_sim.experiment.spec import ExperimentSpec, SpecError


@dataclass
class RecordedRun:
    """The rows of a run directory, as written by the runner."""

    path: Path
    spec: ExperimentSpec
    episodes: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def episode_steps(self) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """Steps grouped by (controller, episode), in step order."""
        grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for row in self.steps:
            grouped.setdefault((row["controller"], row["episode"]), []).append(row)
        for rows in grouped.values():
            rows.sort(key=lambda r: int(r["step"]))
        return grouped


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            raise SpecError(f"{path}:{n}: not a JSON line") from None
    return rows


def load_run(path: str | Path) -> RecordedRun:
    """Read a run directory; SpecError (exit 2) when it is not one."""
    p = Path(path)
    spec_file = p / "spec.json"
    if not spec_file.is_file():
        raise SpecError(f"{p}: not a run directory (no spec.json)")
    try:
        data = json.loads(spec_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        raise SpecError(f"{spec_file}: not valid JSON") from None
    spec = parse_spec(data, str(spec_file))
    episodes = _jsonl(p / "episodes.jsonl")
    if not episodes:
        raise SpecError(f"{p}: no finished episodes in episodes.jsonl")
    return RecordedRun(p, spec, episodes, _jsonl(p / "steps.jsonl"), _jsonl(p / "calls.jsonl"))
