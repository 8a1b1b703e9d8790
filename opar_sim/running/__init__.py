"""Running a spec.

Runner, chunks, executors (process pool, Dask), sweep, the tuning search and its evaluators.
"""
