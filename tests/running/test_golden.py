"""Golden digests: the shipped experiments give the same bytes as before the layout change.

The digests in ``golden_digests.json`` were recorded before the packages were
reorganised into the layers of docs/design.md §4; a change that moves code must leave every
``episodes.jsonl`` and ``steps.jsonl`` byte-identical, and ``summary.json`` too.
A change that alters random streams or results on purpose regenerates them with
``OPAR_SIM_REGOLD=1 pytest tests/running/test_golden.py`` and says so in its commit.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from opar_sim.cli import main
from tests.conftest import EXPERIMENTS

GOLDEN = Path(__file__).with_name("golden_digests.json")
FILES = ("episodes.jsonl", "steps.jsonl", "summary.json")

# (experiment, command, seed, episodes): small enough for the suite, every mechanism covered
CASES = [
    ("flight_booking", "run", 3, 40),
    ("flight_booking_controllers", "run", 3, 25),
    ("compare_flight_booking", "run", 3, 25),
    ("pid_gain_map", "sweep", 3, 8),
    ("context_rebound", "run", 3, 30),
    ("team", "run", 3, 15),
    ("research_qa_faults", "run", 3, 30),
    ("guardrails", "run", 3, 30),
    ("reflexion", "run", 3, 20),
    ("flight_booking_guarded", "run", 3, 30),
    ("weather", "run", 3, 30),
]


def _digests(out: Path) -> dict[str, str]:
    found = {}
    for path in sorted(out.rglob("*")):
        if path.name in FILES:
            rel = str(path.relative_to(out))
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _run(name: str, command: str, seed: int, episodes: int, out: Path) -> dict[str, str]:
    spec = str(EXPERIMENTS / f"{name}.toml")
    argv = [command, spec, "--seed", str(seed), "--episodes", str(episodes)]
    argv += ["--out", str(out), "--workers", "1"]
    assert main(argv) == 0
    return _digests(out)


@pytest.mark.parametrize(("name", "command", "seed", "episodes"), CASES)
def test_same_bytes_as_recorded(tmp_path: Path, name: str, command: str, seed: int, episodes: int):
    found = _run(name, command, seed, episodes, tmp_path / name)
    key = f"{name}:{command}:{seed}:{episodes}"
    if os.environ.get("OPAR_SIM_REGOLD"):
        recorded = json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}
        recorded[key] = found
        GOLDEN.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
        return
    expected = json.loads(GOLDEN.read_text())[key]
    assert found.keys() == expected.keys()
    changed = [f for f in expected if found[f] != expected[f]]
    assert not changed, f"{key}: bytes changed in {changed}"
