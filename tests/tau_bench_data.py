"""Where the tests find the recorded τ-bench runs (never copied into the repository).

Looked up in order: the env ``OPAR_SIM_TAU_BENCH`` (the directory or the file), then
``<repo>/../shared/data/tau-bench``, then ``/work/shared/data/tau-bench``.  Absent, the
tests that need it skip with a message, unless ``OPAR_SIM_REQUIRE_DATA=1`` (``make
pytest``), which makes them fail instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT

FILE_NAME = "gpt-4o-airline.train.json"


def tau_bench_file() -> Path:
    """The recorded GPT-4o airline runs, or a skip (a failure with OPAR_SIM_REQUIRE_DATA=1)."""
    places = []
    if os.environ.get("OPAR_SIM_TAU_BENCH"):
        places.append(Path(os.environ["OPAR_SIM_TAU_BENCH"]))
    places += [ROOT.parent / "shared" / "data" / "tau-bench", Path("/work/shared/data/tau-bench")]
    for place in places:
        candidate = place / FILE_NAME if place.is_dir() else place
        if candidate.is_file():
            return candidate
    message = (
        f"{FILE_NAME} not found (set OPAR_SIM_TAU_BENCH, or put it in ../shared/data/tau-bench)"
    )
    if os.environ.get("OPAR_SIM_REQUIRE_DATA") == "1":
        pytest.fail(message + "; OPAR_SIM_REQUIRE_DATA=1 requires it")
    pytest.skip(message)
