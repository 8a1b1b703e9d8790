"""The ``opar-sim`` command line: thin commands, one renderer, the HTML report."""

from opar_sim.cli.main import main

__all__ = ["main"]
