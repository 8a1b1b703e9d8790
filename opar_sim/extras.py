"""How to install an optional extra: one sentence, the same wherever a package is missing.

opar-sim is installed from its clone, not from PyPI, so the advice names the
clone's editable install (``make install`` already has tune, dask and analysis).
"""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """The install advice for one of ``pyproject.toml``'s optional extras.

    Args:
        extra: The extra's name, e.g. ``"analysis"``.

    Returns:
        e.g. ``install the analysis extra: .venv/bin/pip install -e '.[analysis]' in the
        opar-sim clone``.
    """
    return f"install the {extra} extra: .venv/bin/pip install -e '.[{extra}]' in the opar-sim clone"
