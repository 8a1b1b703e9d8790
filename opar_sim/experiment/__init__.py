"""Experiment running: spec, build, run directory, runner, executors, sweep and tuning."""
