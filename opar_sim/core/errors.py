"""The one error type of bad input, and the nearest-name suggestion its messages use.

Every reader of something a user gives (a spec, a run directory, a JSON-lines
file, an environment variable, a flag) raises ``InputError`` (or a subclass:
``SpecError``, ``RunDirError``, ``UsageError``) with a one-line message that
names the file, the line and the field; the command line turns it into exit
status 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel


class InputError(ValueError):
    """Bad input from the user, a file or the environment: one line, exit status 2."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the nearest of ``choices``, or ``""`` when none is near.

    Args:
        word: The misspelt name.
        choices: The valid names.

    Returns:
        The suggestion, with a leading space, or an empty string.
    """
    names = list(choices)
    same_letters = [name for name in names if name.lower() == word.lower()]  # PID -> pid
    near = same_letters or difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe_problem(err: Mapping[str, Any]) -> str:
    """Pydantic's error detail as the spec's words: what was expected, what was given.

    Args:
        err: One item of ``ValidationError.errors()``.

    Returns:
        The problem, without the path.
    """
    kind = str(err["type"])
    ctx = err.get("ctx") or {}
    got = _shown(err.get("input"))
    expected = {
        "float_parsing": "a number",
        "float_type": "a number",
        "int_parsing": "a whole number",
        "int_type": "a whole number",
        "int_from_float": "a whole number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_type": "text",
        "dict_type": "a table",
        "model_type": "a table",
        "model_attributes_type": "a table",
        "list_type": "a list",
        "tuple_type": "a list",
    }
    if kind in expected:
        return f"expected {expected[kind]}, got {got}"
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("greater than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {ctx.get(key)}, got {got}"
    if kind == "finite_number":
        return f"must be a finite number, got {got}"
    if kind == "missing":
        return "missing (this key is required)"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {got}"
    if kind == "string_pattern_mismatch":
        return f"may hold only letters, digits and _ . -, got {got}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s)"
    if kind == "int_parsing_size":
        return f"is too large, got {got}"
    message = str(err["msg"]).removeprefix("Value error, ")
    return message if kind == "value_error" else f"{message}, got {got}"


def keys_at(model: Any, path: tuple[Any, ...]) -> list[str]:
    """The valid keys of the table at ``path`` inside a pydantic model.

    Args:
        model: A pydantic model class (or a type hint holding one).
        path: The keys and indices leading to the table.

    Returns:
        The table's field names, or [] when the table is open (a dict) or unknown.
    """
    node: Any = model
    for part in path:
        node = _strip_optional(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(str(part))
            if field is None:
                return []
            node = field.annotation
            continue
        args = get_args(node)
        origin = get_origin(node)
        if origin in (dict, Mapping) and len(args) == 2:
            node = args[1]
        elif origin in (list, tuple) and args:
            node = args[0]
        else:
            return []
    node = _strip_optional(node)
    if isinstance(node, type) and issubclass(node, BaseModel):
        return list(node.model_fields)
    return []


def _strip_optional(node: Any) -> Any:
    if isinstance(node, UnionType) or get_origin(node) is Union:
        members = [a for a in get_args(node) if a is not type(None)]
        return members[0] if len(members) == 1 else node
    return node
