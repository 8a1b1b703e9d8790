"""The shipped Reflect laws written against arrays, for the lockstep batch engine.

Each twin here runs one scalar law (the reference implementation) on N
episodes at once: its state is an array per field, ``decide`` takes the
evaluation and loop context as arrays and returns the signals
(``CONTINUE``/``REPLAN``/``TERMINATE`` codes) and the give-up claims.  The
rows outside ``mask`` are finished episodes: the engine never reads them
again, so a law may leave their state anything (sparing a masked write per
field).  ``from_scalar`` turns a built scalar law
into its batch twin, with the same parameters.  A law with no twin (the
Bayes law, a law of the user's) runs through its scalar reference, one
instance per episode, row by row (``ScalarRows``: exact by construction, at
the scalar law's own cost per Reflect); only a law that reads the hidden
state and has no twin is refused (``Unsupported``).  The oracle's twin reads
the hidden state the engine puts in the reading, as the scalar one reads its
truth probe.

The package: ``protocol`` (signal codes, the reading, the ``BatchLaw``
protocol), ``pid`` (the cognitive PID's twin), ``laws`` (the other shipped
laws' twins), ``scalar`` (``ScalarRows``) and ``twins`` (``from_scalar``).
"""

from controllers.batch.laws import (
    BatchBangBang,
    BatchConfidence,
    BatchFixedInterval,
    BatchOpenLoop,
    BatchOracle,
    BatchSPRT,
    BatchStallCounter,
    BatchThreshold,
)
from controllers.batch.pid import BatchPID
from controllers.batch.protocol import (
    CONTINUE,
    REPLAN,
    TERMINATE,
    BatchLaw,
    Reading,
    Signals,
    Unsupported,
)
from controllers.batch.scalar import ScalarRows
from controllers.batch.twins import TWINS, from_scalar

__all__ = [
    "CONTINUE",
    "REPLAN",
    "TERMINATE",
    "TWINS",
    "BatchBangBang",
    "BatchConfidence",
    "BatchFixedInterval",
    "BatchLaw",
    "BatchOpenLoop",
    "BatchOracle",
    "BatchPID",
    "BatchSPRT",
    "BatchStallCounter",
    "BatchThreshold",
    "Reading",
    "ScalarRows",
    "Signals",
    "Unsupported",
    "from_scalar",
]
