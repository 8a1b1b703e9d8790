"""A user's own controller from a Python file: ``path/to/file.py:ClassName``.

A controller name of that form (``run --controller``, ``compare --controllers``,
``[controller] name`` or a ``[[compare]]`` entry) loads the file, takes the
class and registers it in the controller registry under the reference itself
(its instances are named so), so the run directory names it and every worker
process (which builds the spec again) loads the same file.  A relative path
is resolved against the working directory.  Nothing needs packaging or an
entry point.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import controllers
import environments
from opar_sim.spec.schema import SpecError

_FILE_REF = re.compile(r"^(?P<path>.+\.py):(?P<attr>[A-Za-z_][A-Za-z0-9_]*)$")


def is_file_ref(name: str) -> bool:
    """Whether a controller name is a ``file.py:ClassName`` reference.

    Args:
        name: A controller name from a spec or the command line.

    Returns:
        True for ``something.py:Identifier``.
    """
    return _FILE_REF.match(name) is not None


def _load_class(ref: str, kind: str) -> Any:
    """Import ``file.py:ClassName`` once per process and return the class.

    Raises:
        SpecError: naming ``kind`` and ``ref`` when the file is missing or fails to import
            or the class is not in it.
    """
    match = _FILE_REF.match(ref)
    if match is None:
        raise SpecError(f"{kind} {ref!r}: expected path/to/file.py:ClassName")
    path = Path(match["path"]).expanduser()
    attr = match["attr"]
    if not path.is_file():
        raise SpecError(f"{kind} {ref!r}: file not found: {path}")
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"opar_sim_user_{path.stem}_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise SpecError(f"{kind} {ref!r}: cannot import {path}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module  # dataclasses and pickling look the module up
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:  # the user's code: report it in one line
            del sys.modules[module_name]
            raise SpecError(
                f"{kind} {ref!r}: importing {path} failed: {type(exc).__name__}: {exc}"
            ) from None
    found = getattr(module, attr, None)
    if found is None:
        classes = sorted(n for n, v in vars(module).items() if inspect.isclass(v))
        known = ", ".join(c for c in classes if c[0] != "_") or "none"
        raise SpecError(f"{kind} {ref!r}: no {attr!r} in {path} (classes there: {known})")
    return found


def _load_kind(
    ref: str, kind: str, needs: tuple[str, ...], how: str, names: Callable[[], list[str]]
) -> Any | None:
    """The class ``ref`` names, checked to have ``needs``; None when ``names()`` has it already."""
    if ref in names():
        return None
    found = _load_class(ref, kind)
    if not callable(found) or not all(callable(getattr(found, m, None)) for m in needs):
        raise SpecError(f"{kind} {ref!r}: {found.__name__} is not a {kind}: it needs {how}")
    return found


def load_controller(ref: str) -> str:
    """Load ``file.py:ClassName`` and register the class under ``ref`` (once per process).

    Args:
        ref: The reference, e.g. ``laws/patient.py:Patient``.

    Returns:
        ``ref``, now a registered controller name.

    Raises:
        SpecError: when the file is missing or fails to import, the class is not in
            it, or it is not a controller (no ``decide`` and ``reset``).
    """
    how = "reset() and decide(evaluation, ctx) -> Decision"
    found = _load_kind(ref, "controller", ("decide", "reset"), how, controllers.names)
    if found is not None:
        controllers.register(ref, _named(found, ref))
    return ref


def load_task(ref: str) -> str:
    """Load a task class from ``file.py:ClassName`` and register it under ``ref``, as controllers.

    Args:
        ref: The reference, e.g. ``tasks/collect.py:Collect``.

    Returns:
        ``ref``, now a registered task name.

    Raises:
        SpecError: when the file is missing or fails to import, the class is not in it,
            or it is not a task (no ``execute``, ``expert_action`` and ``observe``).
    """
    how = "execute(), expert_action() and observe() (see opar-sim init NAME --kind task)"
    needs = ("execute", "expert_action", "observe")
    found = _load_kind(ref, "task", needs, how, environments.names)
    if found is not None:
        environments.register(ref, found)
    return ref


def _named(cls: Callable[..., Any], ref: str) -> Callable[..., Any]:
    """A factory of ``cls`` whose instances are named ``ref``, as the spec names them."""

    def make(**params: Any) -> Any:
        made = cls(**params)
        try:
            made.name = ref
        except AttributeError:
            raise ValueError(f"{ref}: cannot set its name (a read-only `name`?)") from None
        return made

    make.__doc__ = cls.__doc__
    make.__signature__ = inspect.signature(cls)  # type: ignore[attr-defined]
    return make
