"""``.to_frame()`` support: pandas is optional (the ``analysis`` extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opar_sim.extras import install_hint

PANDAS_MISSING = f".to_frame() needs pandas, which is not installed: {install_hint('analysis')}"


def to_frame(rows: Sequence[Mapping[str, Any]], index: Sequence[str] | None = None) -> Any:
    """A pandas DataFrame of ``rows``; a clear ImportError when pandas is missing."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(PANDAS_MISSING) from exc
    frame = pd.DataFrame([dict(r) for r in rows])
    if index is not None:
        frame.index = list(index)
    return frame
