"""The seed ledger: the only place that names development, tuning, hold-out and evaluation seeds.

Every study draws its episodes from spec seeds named here, so which seed a quoted number
used can be read off one page (docs/results.md records it per number):

* ``DEVELOPMENT_SEED``: what a developer iterates on (examples, quick checks). Nothing
  quoted as a result is scored on it, and development never scores on a hold-out seed.
* ``TUNING_SEED``: the training episodes of a single tuning run (``refit``, the detectors'
  and ``sprt``'s calibration). ``TUNING_SEEDS``: one per tuning replicate; replicate r of
  ``tune`` and ``shootout`` trains on ``TUNING_SEEDS[r]`` with sampler seed r, so the
  training seed is a random factor of the estimate, not a fixed choice.  ``--seed S``
  (``seed_offset``) moves the replicates along the ledger: with R replicates, replicate r
  trains on ``TUNING_SEEDS[S·R + r]`` with sampler seed S·R + r (``replicate_seeds``), so
  offsets 0, 1, 2 of five replicates use disjoint training seeds.
* ``CONFIRM_SEED``: fresh episodes on which ``tune`` races its finalists against the
  incumbent (the spec's current gains), with common random numbers.
* ``HOLDOUT_SEED``: the held-out episodes of the earlier releases' shoot-out, ``refit``,
  ablation, relay check and ``sprt`` measurements. It has been looked at (the defaults
  refit and four successive ``bayes`` versions were developed against it), which the
  docs disclose; numbers quoted from it are not confirmatory.
* ``RELEASE_HOLDOUT_SEED``: this release's hold-out, chosen on the day it was named
  (2026-12-03) and seen by no development, default, fit or earlier report: the replicated
  ``tune`` and ``shootout`` score their recommendation on it.
* ``EVAL_SEEDS``: the spec seeds the README's and the claims table's numbers pool;
  ``QUICK_SEEDS`` the claims' smoke test; ``FRESH_SEEDS`` the claims' confirmatory
  re-check (never the README's, never tuning's).

This module imports nothing, so any layer may read it (``tests/core/test_layout.py``
counts the ``opar_sim.studies`` package's empty ``__init__`` as no dependency).
"""

from __future__ import annotations

DEVELOPMENT_SEED = 7  # examples and iteration; never a quoted result
TUNING_SEED = 100  # training episodes: spec seed 100 (reports use EVAL_SEEDS)
TUNING_SEEDS: tuple[int, ...] = tuple(range(100, 120))  # 100 .. 119, one per replicate
CONFIRM_SEED = 500_009  # racing the finalists against the incumbent
HOLDOUT_SEED = 1_000_003  # held-out episodes of earlier releases (looked at; see above)
RELEASE_HOLDOUT_SEED = 20_261_203  # this release's hold-out: nothing has looked at it
EVAL_SEEDS: tuple[int, ...] = (0, 1, 2, 3)  # the README's and the claims table's seeds
QUICK_SEEDS: tuple[int, ...] = (0,)  # `claims --quick`
FRESH_SEEDS: tuple[int, ...] = (11, 12)  # the claims' confirmatory re-check


def replicate_seeds(replicates: int, offset: int = 0) -> list[tuple[int, int]]:
    """(training seed, sampler seed) of each tuning replicate: ``TUNING_SEEDS[k]`` and k.

    Args:
        replicates: R, the number of replicates.
        offset: S: replicate r is number k = S·R + r of the ledger.

    Returns:
        One pair per replicate, in replicate order.

    Raises:
        ValueError: when the ledger has fewer than (S + 1)·R tuning seeds, or R < 1.
    """
    first = offset * replicates
    if replicates < 1 or offset < 0 or first + replicates > len(TUNING_SEEDS):
        raise ValueError(
            f"{replicates} replicates at seed offset {offset} need tuning seeds "
            f"{first}..{first + replicates - 1}; the ledger has {len(TUNING_SEEDS)}"
        )
    return [(TUNING_SEEDS[k], k) for k in range(first, first + replicates)]


__all__ = [
    "CONFIRM_SEED",
    "DEVELOPMENT_SEED",
    "EVAL_SEEDS",
    "FRESH_SEEDS",
    "HOLDOUT_SEED",
    "QUICK_SEEDS",
    "RELEASE_HOLDOUT_SEED",
    "TUNING_SEED",
    "TUNING_SEEDS",
    "replicate_seeds",
]
