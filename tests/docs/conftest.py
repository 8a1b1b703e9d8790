"""Controllers loaded from users' files in these tests are forgotten after each test."""

from __future__ import annotations

import pytest

from controllers.registry import CONTROLLERS


@pytest.fixture(autouse=True)
def _forget_file_controllers():
    before = dict(CONTROLLERS.factories)
    yield
    CONTROLLERS.factories.clear()
    CONTROLLERS.factories.update(before)
