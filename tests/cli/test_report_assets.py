"""The report page's style sheet and script ship as package data files, not Python strings."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

from opar_sim.cli.report import ASSETS, asset

ROOT = Path(__file__).resolve().parents[2]


def test_every_asset_is_declared_package_data():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = declared["tool"]["setuptools"]["package-data"]["opar_sim"]
    found = sorted((ROOT / "opar_sim" / "cli" / ASSETS).iterdir())
    names = [p.relative_to(ROOT / "opar_sim").as_posix() for p in found]
    assert {p.name for p in found} >= {"report.css", "report.js"}
    assert [n for n in names if not any(fnmatch(n, p) for p in patterns)] == []


def test_the_page_reads_them_through_importlib_resources():
    assert asset("report.css").startswith("* { box-sizing: border-box; }")
    assert "getElementById('report-data')" in asset("report.js")
