"""The seed ledger: the only place that names the seeds of tuning, hold-out and evaluation.

Every study draws its episodes from spec seeds named here, so which seed a quoted
number used can be read off one page (docs/results.md records it per number):

* ``TUNING_SEED``: the training episodes of every tuning run (the shoot-out, ``refit``,
  the detectors' and ``sprt``'s calibration). Reports never score on it.
* ``HOLDOUT_SEED``: the held-out episodes the shoot-out, ``refit``, the ablation, the
  relay check and ``sprt``'s measurements score on. Seen by no trial; it has been looked
  at by earlier releases' development (the defaults refit and successive ``bayes``
  versions), which the docs disclose.
* ``EVAL_SEEDS``: the spec seeds the README's and the claims table's numbers pool;
  ``QUICK_SEEDS`` the claims' smoke test.

This module imports nothing, so any layer may read it (``tests/core/test_layout.py``
counts the ``opar_sim.studies`` package's empty ``__init__`` as no dependency).
"""

from __future__ import annotations

TUNING_SEED = 100  # training episodes: spec seed 100 (reports use EVAL_SEEDS)
HOLDOUT_SEED = 1_000_003  # held-out episodes: seen by no default, report or trial
EVAL_SEEDS: tuple[int, ...] = (0, 1, 2, 3)  # the README's and the claims table's seeds
QUICK_SEEDS: tuple[int, ...] = (0,)  # `claims --quick`

__all__ = ["EVAL_SEEDS", "HOLDOUT_SEED", "QUICK_SEEDS", "TUNING_SEED"]
