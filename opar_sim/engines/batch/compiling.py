"""A notice when the batch engine's row loops are compiled, not loaded from Numba's cache.

The first batch run on a machine (a fresh clone, a new Python) compiles every row loop
before its first step: 6 to 14 s on 2 cores with the progress bar at 0.  Numba's
``numba:compile`` event fires only for a kernel it compiles (a cache miss, after the cache
was tried: ``Dispatcher.compile``), so a run whose kernels are cached says nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

COMPILING = (
    "compiling the batch engine's row loops for this machine (once, about 10 s; then cached)"
)


@contextmanager
def compile_notice(say: Callable[[str], None]) -> Iterator[None]:
    """Within: ``say(COMPILING)`` once, at the first kernel Numba compiles in this process.

    Args:
        say: Prints one line (the CLI's console).
    """
    from numba.core import event

    class _Once(event.Listener):
        said = False

        def on_start(self, _event: Any) -> None:
            if not self.said:
                self.said = True
                say(COMPILING)

        def on_end(self, _event: Any) -> None:
            """Nothing more to say: the line went out as the first compile started."""

    with event.install_listener("numba:compile", _Once()):
        yield
