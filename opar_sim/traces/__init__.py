"""Recorded agent runs in, ordinary run directories out.

A parser per format (``formats``) turns a file of recorded conversations into
``Conversation`` records; ``importer`` turns those into the rows of a run
directory (one episode per run, one step per assistant turn) and writes them
through ``opar_sim.rundir``.  See docs/traces.md.
"""

from opar_sim.traces.formats import FORMATS, Conversation, parse_file
from opar_sim.traces.importer import ImportResult, conversation_rows, import_traces
from opar_sim.traces.runs import TraceFormatError

__all__ = [
    "FORMATS",
    "Conversation",
    "ImportResult",
    "TraceFormatError",
    "conversation_rows",
    "import_traces",
    "parse_file",
]
