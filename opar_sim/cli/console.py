"""The console every command prints to: rich, with file-derived text made terminal-safe.

A string a command prints may carry text read from a run directory or a trace (a task
id, a model name, a controller's name).  ``SafeConsole.print`` writes every control
character of a ``str`` argument as an escape (``printable``), so an ``ESC[2J`` or an
OSC 8 hyperlink in a trace is shown as text, never acted on by the terminal.  Rich's own
styles are added after this, so colours still work; ``TextTable`` cleans its cells itself.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from opar_sim.measure.table import printable


class SafeConsole(Console):
    """A rich ``Console`` whose ``print`` escapes control characters in string arguments."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print as rich does, each string argument made terminal-safe first."""
        super().print(*(printable(o) if isinstance(o, str) else o for o in objects), **kwargs)
