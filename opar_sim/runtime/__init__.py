"""Tuned laws inside real agents: the gate, its self-evaluation, its record, the adapters.

``Gate`` runs any registered law (or a trace law) on what a host agent sees after each
step and answers CONTINUE, REPLAN or TERMINATE; ``load_tuned`` builds one from a tuning
directory; ``SelfEvaluator`` makes the self-evaluation a law reads through an Ollama or
OpenAI-compatible endpoint; ``LiveRecorder`` writes the run directory a simulation writes.
The adapters (``opar_sim.runtime.adapters.<framework>``) bind the gate to each framework's
own hook and import that framework only when they are imported (``pip install
'opar-sim[agents]'``).
"""

from opar_sim.runtime.gate import Gate, HostStep, NeedsEvaluation, Verdict
from opar_sim.runtime.laws import LawError, ToolCall, TraceLaw, build_law
from opar_sim.runtime.record import LiveRecorder

__all__ = [
    "Gate",
    "HostStep",
    "LawError",
    "LiveRecorder",
    "NeedsEvaluation",
    "ToolCall",
    "TraceLaw",
    "Verdict",
    "build_law",
]
