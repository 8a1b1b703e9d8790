"""Experiment running: the spec, building its parts, the run directory, runner, executors, sweep, tune."""
