"""The kernel: domain types, the protocols of every pluggable part, seeding, the loop, supervision.

It imports nothing else of the project; everything else builds on it.  The
domain types are re-exported by the root package (``from opar_sim import
ControlSignal``); the rest is imported from its module (``opar_sim.core.loop``,
``opar_sim.core.controller``, ...).
"""
