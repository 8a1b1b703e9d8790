"""Optuna's journal of a search, opened as a file someone may have shared or damaged.

A tuning keeps its trials in Optuna's journal storage (``OUT/replicate_R/optuna.journal``).
Opening one here checks, before Optuna reads a line of it: that it is a regular file under
the input ceiling (``rundir.open_input``: a FIFO or a link to ``/dev/zero`` is refused), not
a link to somewhere else (Optuna appends to it), and that every complete line is a JSON
object (a torn last line, a killed write, is cut when resuming).  A lock file beside it
(``optuna.journal.lock``, Optuna's ``JournalFileSymlinkLock``) can only be one a killed
process left, since a tuning holds it for one append: Optuna's own grace period never ends
the wait when the journal it points to is gone, so resuming removes it and says so, and a
fresh tuning refuses it.  After loading, every trial's parameters are checked against the
spec's search space: a journal of another space is refused, never adopted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson

from opar_sim.rundir import check_destination, open_input
from opar_sim.spec.schema import ParamRange, SpecError

JOURNAL_FILE = "optuna.journal"  # Optuna's journal of a tuning: optuna-dashboard opens it
LOCK_SUFFIX = ".lock"  # optuna.storages.journal's lock file: the journal's name + ".lock"
AWAY = "move it away to run its trials again, or tune into another --out"


def _lock(path: Path, resume: bool, on_note: Callable[[str], None] | None) -> None:
    """Remove (resuming) or refuse the lock a killed process left beside ``path``."""
    lock = Path(f"{path}{LOCK_SUFFIX}")
    if not (lock.is_symlink() or lock.exists()):
        return
    if lock.is_dir() and not lock.is_symlink():
        raise SpecError(f"{lock}: a directory where Optuna's lock file goes; remove it")
    if not resume:
        raise SpecError(
            f"{lock}: a stale Optuna lock (left by a killed tuning): finish the tuning with "
            "--resume, which removes it"
        )
    gone = "its journal is gone" if not path.exists() else "left by a killed tuning"
    lock.unlink()
    if on_note is not None:
        on_note(f"removed a stale Optuna lock, {lock} ({gone})")


def _check_lines(path: Path, resume: bool) -> None:
    """Every complete line a JSON object; resuming, a torn last line is cut."""
    check_destination(path)  # Optuna appends to the journal: never through a planted link
    size, torn = 0, 0
    with open_input(path) as f:
        for number, raw in enumerate(f, 1):
            if not raw.endswith(b"\n"):  # a torn last line: the write a kill cut short
                torn = number
                break
            size += len(raw)
            try:
                ok = isinstance(orjson.loads(raw), dict)
            except orjson.JSONDecodeError:
                ok = False
            if not ok:
                raise SpecError(
                    f"{path}:{number}: not a JSON object: a damaged Optuna journal; {AWAY}"
                )
    if torn and not resume:
        raise SpecError(f"{path}:{torn}: a torn last line; finish the tuning with --resume")
    if torn:
        with path.open("r+b") as cut:
            cut.truncate(size)


def expected_distributions(space: Mapping[str, ParamRange]) -> dict[str, Any]:
    """The Optuna distribution each path of the space is searched with (as ``minimize`` asks)."""
    from optuna.distributions import FloatDistribution, IntDistribution

    return {
        path: (
            IntDistribution(math.ceil(r.low), math.floor(r.high), log=r.log)
            if r.integer
            else FloatDistribution(r.low, r.high, log=r.log)
        )
        for path, r in space.items()
    }


def _describe(distribution: Any) -> str:
    log = ", log" if getattr(distribution, "log", False) else ""
    return f"[{distribution.low:g}, {distribution.high:g}{log}]"


def check_space(storage: Any, space: Mapping[str, ParamRange], path: Path) -> None:
    """Refuse a journal whose trials searched another space than ``space``.

    Raises:
        SpecError: naming the journal, the first foreign trial and its parameter.
    """
    wanted = expected_distributions(space)
    for study in storage.get_all_studies():
        study_id = storage.get_study_id_from_name(study.study_name)
        for trial in storage.get_all_trials(study_id, deepcopy=False):
            names = set(trial.distributions)
            if not names <= set(wanted):
                extra = ", ".join(sorted(names - set(wanted)))
                raise SpecError(
                    f"{path}: trial {trial.number} searched {extra}, not in the spec's "
                    f"[tune.space]: a journal of another tuning; {AWAY}"
                )
            for name, found in trial.distributions.items():
                value, want = trial.params[name], wanted[name]
                if found != want or not want.low <= value <= want.high:
                    raise SpecError(
                        f"{path}: trial {trial.number} has {name} = {value:g} (searched in "
                        f"{_describe(found)}); the spec's [tune.space] is {_describe(want)}: "
                        f"a journal of another search space; {AWAY}"
                    )


def journal_storage(
    path: Path,
    *,
    resume: bool,
    space: Mapping[str, ParamRange] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> Any:
    """Optuna's ``JournalStorage`` on ``path``, checked first (module docstring).

    Args:
        path: The journal file (``OUT/replicate_R/optuna.journal``).
        resume: The tuning was interrupted: cut a half-written last line of the
            journal and remove the lock a killed process left behind.
        space: The search space every trial of the journal must belong to.
        on_note: Called with one line for each thing repaired (a stale lock removed).

    Returns:
        The storage.

    Raises:
        SpecError: one line: a stale lock (not resuming), a journal that is no regular
            file, too big, linked, damaged, or of another search space.
    """
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    _lock(path, resume, on_note)
    if path.is_symlink() or path.exists():
        _check_lines(path, resume)
    try:
        storage = JournalStorage(JournalFileBackend(str(path)))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, AssertionError) as exc:
        # lines of JSON that are no Optuna operations (an unknown op_code: an AssertionError)
        raise SpecError(
            f"{path}: a damaged Optuna journal ({type(exc).__name__}: {exc}); {AWAY}"
        ) from None
    if space is not None:
        check_space(storage, space, path)
    return storage
