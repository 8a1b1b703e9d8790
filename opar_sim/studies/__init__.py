"""One protocol per module.

Tune, shootout, ablation, refit, claims, sprt, detectors, relay, the memory studies.
"""
