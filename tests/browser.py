"""The headless-Chromium harness the report's browser tests share.

Debian's ``chromium`` (``/usr/bin/chromium``, or ``$OPAR_SIM_CHROMIUM``) driven by
Playwright, which never downloads a browser of its own here.  Without Chromium or
Playwright a browser test skips, saying which is missing; with
``OPAR_SIM_REQUIRE_BROWSER=1`` (the Makefile's test line, after ``.ci/run`` installed
Chromium) it fails instead.  Used by ``tests/cli/test_report_browser.py`` and
``tests/reliability/test_report_xss.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("OPAR_SIM_CHROMIUM", "/usr/bin/chromium")
# as this machine's notes advise: no background connections, no sandbox as root, a fresh profile
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_or_skip() -> Any:
    """Playwright's sync API, when it and Chromium are installed; else skip (or fail)."""
    missing = []
    if not (Path(CHROMIUM).is_file() or shutil.which("chromium")):
        missing.append(f"Chromium ({CHROMIUM}; apt-get install chromium)")
    try:
        from playwright import sync_api
    except ImportError:
        sync_api = None
        missing.append("the Python package playwright (pip install playwright)")
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("OPAR_SIM_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (OPAR_SIM_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    return sync_api
