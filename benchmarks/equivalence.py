"""The batch engine against the SimPy engine, per twin spec and law: the table of docs/batch.md.

For each spec and law: 10,000 SimPy episodes against 100,000 batch episodes (seed 0,
each law's defaults, one trial), and per metric (success, steps, tokens, REPLANs) the
two means, their difference (batch − SimPy), the two-sample standard error
sqrt(s1²/n1 + s2²/n2) and z = difference / error.  ``tests/engines/test_batch.py``
asserts the same comparisons (``OPAR_SIM_BATCH_FULL=1``: this grid, |z| ≤ 3).

``--first`` starts the SimPy episodes elsewhere (a second SimPy sample against the same
batch one: how far the table's SimPy sample is from others).

    python benchmarks/equivalence.py [--simpy N] [--first K] [--specs a.toml,...] [--laws pid,...]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.engines.test_batch import (  # noqa: E402
    CONTROLLERS,
    TWIN_SPECS,
    batch_metrics,
    differences,
    simpy_metrics,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table's rows (markdown), one per spec, law and metric."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--simpy", type=int, default=10_000, help="SimPy episodes (batch: 10×)")
    parser.add_argument("--first", type=int, default=0, help="the first SimPy episode")
    parser.add_argument("--specs", default=",".join(TWIN_SPECS))
    parser.add_argument("--laws", default=",".join(c for c in CONTROLLERS if c != "bayes"))
    args = parser.parse_args(argv)
    if args.first < 0 or args.simpy < 2:
        parser.error("--first must be >= 0 and --simpy >= 2")
    print("| spec | law | metric | SimPy | batch | difference | standard error | z |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.specs.split(","):
        path = ROOT / "experiments" / name
        for law in args.laws.split(","):
            found = differences(
                simpy_metrics(law, args.simpy, path=path, first=args.first),
                batch_metrics(law, 10 * args.simpy, path=path),
            )
            for metric, (a, b, diff, se) in found.items():
                z = diff / se if se else 0.0
                print(
                    f"| {name} | {law} | {metric} | {a:,.4g} | {b:,.4g} | {diff:+,.4g} "
                    f"| {se:,.3g} | {z:+.2f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
