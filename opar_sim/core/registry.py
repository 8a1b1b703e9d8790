"""One generic name → factory registry, for every pluggable kind (controllers, tasks, ...).

``Registry[T]("controller")`` maps names to factories returning ``T``;
``make(name, **params)`` builds one and turns every way the parameters can be
wrong into a ``ValueError`` that names the kind, the name and the problem:

* an unknown name: ``unknown controller 'x' (known: a, b)``;
* a keyword the factory's signature does not accept, or a ``TypeError`` or
  ``ValueError`` from the factory: ``controller 'x': <problem>``;
* a pydantic ``ValidationError`` from the factory (the first error):
  ``task 'x' parameter <loc>: <msg>``, raised as a ``ParameterError`` that
  keeps the location, message and error type for callers that word it
  their own way.

An optional entry-point group is read once, on the first lookup, so other
installed packages can add factories; a name registered here wins over a
plugin of the same name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any, Generic, Protocol, TypeVar

from pydantic import ValidationError

from opar_sim.core.errors import InputError, describe_problem, did_you_mean, keys_at

T = TypeVar("T")


class EntryPointLike(Protocol):
    """What the registry needs of an entry point: its name and what it loads."""

    @property
    def name(self) -> str:
        """The name the loaded factory is registered under."""
        ...

    def load(self) -> Any:
        """Import and return the factory the entry point names."""
        ...


class EntryPointSource(Protocol):
    """``importlib.metadata.entry_points``, or a stand-in with the same keyword."""

    def __call__(self, *, group: str) -> Iterable[EntryPointLike]:
        """The entry points of ``group``."""
        ...


def _installed_entry_points(*, group: str) -> Iterable[EntryPointLike]:
    return metadata.entry_points(group=group)


class UnknownNameError(KeyError, ValueError):
    """A name nothing is registered under: a ``ValueError``, and a ``KeyError`` for lookups."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ParameterError(ValueError):
    """A parameter the factory's pydantic model rejected.

    ``loc`` is the dotted path of the parameter, ``problem`` pydantic's
    message and ``error_type`` its error type (``"extra_forbidden"`` for an
    unknown key).
    """

    def __init__(
        self, kind: str, name: str, loc: str, problem: str, error_type: str, hint: str = ""
    ) -> None:
        super().__init__(f"{kind} {name!r} parameter {loc}: {problem}{hint}")
        self.kind = kind
        self.name = name
        self.loc = loc
        self.problem = problem
        self.error_type = error_type
        self.hint = hint  # " (did you mean 'x'?)" for an unknown key near a valid one


class Registry(Generic[T]):
    """Named factories of one kind of object, built by ``make(name, **params)``.

    ``factories`` is the live name → factory table (replacing it replaces the
    registry's contents); ``plugins_loaded`` says whether the entry-point
    group has been read.
    """

    def __init__(
        self,
        kind: str,
        *,
        entry_point_group: str | None = None,
        entry_points: EntryPointSource | None = None,
    ) -> None:
        """Make an empty registry.

        Args:
            kind: The singular noun used in error messages (``"controller"``).
            entry_point_group: The ``importlib.metadata`` group whose entry
                points are loaded as factories, or None for no plugins.
            entry_points: Where entry points are read from; defaults to
                ``importlib.metadata.entry_points``.
        """
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entry_points: EntryPointSource = entry_points or _installed_entry_points
        self.factories: dict[str, Callable[..., T]] = {}
        self.plugins_loaded = False
        # plugins of the entry-point group that failed to load: name -> one-line reason
        self.plugin_errors: dict[str, str] = {}

    def register(self, name: str, factory: Callable[..., T]) -> None:
        """Register ``factory`` under ``name``; re-registering a name replaces it.

        Args:
            name: The name ``make`` will be called with.
            factory: A callable (usually a class) taking the parameters as keywords.
        """
        self.factories[name] = factory

    def _load_plugins(self) -> None:
        """Read the entry-point group once; names already registered are kept."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        if self.entry_point_group is None:
            return
        try:
            found = list(self._entry_points(group=self.entry_point_group))
        except Exception as exc:  # a broken distribution's metadata
            self.plugin_errors[self.entry_point_group] = f"{type(exc).__name__}: {exc}"
            return
        for ep in found:
            if ep.name in self.factories:
                continue
            try:  # a plugin that fails to import is reported (``list``) and skipped
                self.factories[ep.name] = ep.load()
            except Exception as exc:
                self.plugin_errors[ep.name] = f"{type(exc).__name__}: {exc}".splitlines()[0]

    def names(self) -> list[str]:
        """The registered names, plugins included.

        Returns:
            The names, sorted.
        """
        self._load_plugins()
        return sorted(self.factories)

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self.factories

    def factory(self, name: str) -> Callable[..., T]:
        """The factory registered under ``name``.

        Args:
            name: A registered name.

        Returns:
            The factory itself, not called.

        Raises:
            UnknownNameError: ``unknown <kind> 'name' (known: ...)`` (a
                ``ValueError`` and a ``KeyError``).
        """
        self._load_plugins()
        found = self.factories.get(name)
        if found is None:
            known = ", ".join(sorted(self.factories))
            hint = did_you_mean(str(name), self.factories)
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint} (known: {known})")
        return found

    def describe(self, name: str) -> str:
        """The first line of the factory's docstring (inherited ones count).

        Args:
            name: A registered name.

        Returns:
            The line, or ``""`` when the factory has no docstring.

        Raises:
            UnknownNameError: for an unregistered name.
        """
        doc = inspect.getdoc(self.factory(name)) or ""
        return doc.splitlines()[0] if doc else ""

    def make(self, name: str, /, **params: Any) -> T:
        """Build the object registered under ``name`` from keyword ``params``.

        Args:
            name: A registered name.
            **params: The factory's keyword arguments.

        Returns:
            What the factory returns.

        Raises:
            UnknownNameError: for an unregistered name.
            ParameterError: when the factory's pydantic validation fails
                (``<kind> 'name' parameter <loc>: <msg>``).
            ValueError: ``<kind> 'name': <problem>`` for a keyword the
                factory's signature refuses, or a ``TypeError`` or
                ``ValueError`` the factory raises.
        """
        factory = self.factory(name)
        signature = _signature(factory)
        if signature is not None:
            _check_keywords(self.kind, name, signature, params)
        try:
            return factory(**params)
        except InputError:  # bad input outside the parameters (an environment variable)
            raise
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            hint = ""
            if first["type"] == "extra_forbidden":
                choices = keys_at(getattr(factory, "Params", None), tuple(first["loc"])[:-1])
                hint = did_you_mean(str(first["loc"][-1]), choices)
            problem = (
                "unknown key" if first["type"] == "extra_forbidden" else describe_problem(first)
            )
            raise ParameterError(self.kind, name, where, problem, first["type"], hint) from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{self.kind} {name!r}: {exc}") from None


_SIGNATURES: dict[Any, inspect.Signature | None] = {}


def _signature(factory: Callable[..., Any]) -> inspect.Signature | None:
    """``inspect.signature(factory)``, kept per factory (about 200 µs each time otherwise).

    The batch engine builds a law once per episode when the law has no array twin.
    """
    try:
        known = factory in _SIGNATURES
    except TypeError:  # an unhashable factory: not kept
        return _compute_signature(factory)
    if not known:
        _SIGNATURES[factory] = _compute_signature(factory)
    return _SIGNATURES[factory]


def _compute_signature(factory: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to check (some builtins)
        return None


_NUMBER_HINTS = ("float", "int", float, int)


def _check_keywords(
    kind: str, name: str, signature: inspect.Signature, params: dict[str, Any]
) -> None:
    """Refuse unknown keywords (naming the nearest) and non-numbers where numbers belong."""
    accepted = signature.parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
    for key, value in params.items():
        param = accepted.get(key)
        if param is None:
            if open_ended:
                continue
            keywords = [
                n
                for n, p in accepted.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            ]
            hint = did_you_mean(key, keywords)
            raise ParameterError(kind, name, key, "unknown key", "extra_forbidden", hint)
        if param.annotation in _NUMBER_HINTS and (
            isinstance(value, bool) or not isinstance(value, int | float)
        ):
            shown = describe_problem({"type": "float_type", "input": value})
            raise ParameterError(kind, name, key, shown, "float_type")
    try:
        signature.bind(**params)
    except TypeError as exc:
        raise ValueError(f"{kind} {name!r}: {exc}") from None


__all__ = [
    "EntryPointLike",
    "EntryPointSource",
    "ParameterError",
    "Registry",
    "UnknownNameError",
]
