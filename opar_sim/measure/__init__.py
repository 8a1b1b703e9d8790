"""Reads a run directory and never simulates.

Statistics, paired comparisons, metrics, oscillation, the run analysis, diff.
"""
