"""Shared test setup: a headless matplotlib and the repository's paths.

Test modules import the paths with ``from tests.conftest import EXPERIMENTS``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # once, before any test draws a figure: no display needed

ROOT = Path(__file__).resolve().parents[1]  # the repository (tests/ sits just below it)
EXPERIMENTS = ROOT / "experiments"
SPEC = str(EXPERIMENTS / "flight_booking.toml")  # the default spec of the CLI and analysis tests
