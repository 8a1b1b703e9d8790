"""Fitting the simulated agent to recorded runs.

Direct fitting, the task-heterogeneous model and bayes_fit.
"""
