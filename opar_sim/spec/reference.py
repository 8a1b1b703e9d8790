"""The spec reference: every key a spec accepts, generated from the models that validate it.

``render()`` walks ``ExperimentSpec`` (``opar_sim.spec.schema``) and the
models nested in it, then the parameters of the simulated agent, of every
registered task (its pydantic ``Params``) and of every registered controller
(its signature).  ``docs/spec-reference.md`` is its output;
``tests/docs/test_spec_reference.py`` fails when the file is stale.  Regenerate
it with::

    python -m opar_sim.spec.reference --write docs/spec-reference.md
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

import controllers
import environments
from environments import ToolParams
from opar_sim.agents.simulated import SimulatedAgentParams
from opar_sim.spec.plugins import is_file_ref
from opar_sim.spec.schema import ExperimentSpec

COMMAND = "python -m opar_sim.spec.reference --write docs/spec-reference.md"


def _type(annotation: Any) -> str:
    """A short readable name of a field's type."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin in (typing.Union, types.UnionType):
        parts = [_type(a) for a in args if a is not type(None)]
        optional = " or none" if type(None) in args else ""
        return " or ".join(parts) + optional
    if origin is Literal:
        return "one of " + ", ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (list, tuple):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_type(args[1])}" if args else "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, BaseModel):
        return "(table)"
    if value in ({}, []):
        return "empty"
    return str(value)


def _default(info: FieldInfo) -> str:
    if info.default is not PydanticUndefined:
        return "none" if info.default is None else _value(info.default)
    if info.default_factory is not None:
        return _value(info.default_factory())  # type: ignore[call-arg]
    return "**required**"


def _limits(info: FieldInfo) -> str:
    out = []
    for meta in info.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            bound = getattr(meta, attr, None)
            if bound is not None:
                out.append(f"{sign} {_value(bound)}")
        if getattr(meta, "min_length", None) is not None:
            out.append(f"at least {meta.min_length} long")
        if getattr(meta, "pattern", None) is not None:
            out.append(f"matches `{meta.pattern}`")
    return ", ".join(out)


def _doc(model: type) -> str:
    doc = inspect.getdoc(model) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models a field holds (directly, optionally, in a list or as table values)."""
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if origin is typing.Annotated:
        return _models(get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple):
        return [m for a in get_args(annotation) for m in _models(a)]
    if origin is dict:
        return _models(get_args(annotation)[1])
    return []


def _table_name(prefix: str, annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _table_name(prefix, get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return _table_name(prefix, next(a for a in get_args(annotation) if a is not type(None)))
    if origin is list:
        return f"[[{prefix}]]"
    if origin is dict:
        return f"[{prefix}.NAME]"
    return f"[{prefix}]"


def _model_rows(model: type[BaseModel]) -> list[str]:
    rows = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        meaning = (info.description or "").replace("|", "\\|")
        rows.append(
            f"| `{name}` | {_type(info.annotation)} | {_default(info)} | "
            f"{_limits(info)} | {meaning} |"
        )
    return rows


def _walk(model: type[BaseModel], prefix: str, title: str) -> Iterator[str]:
    """One section per model, then the sections of the models nested in it."""
    yield f"### `{title}`"
    yield ""
    if doc := _doc(model):
        yield doc
        yield ""
    yield from _model_rows(model)
    yield ""
    for name, info in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        for nested in _models(info.annotation):
            yield from _walk(nested, path, _table_name(path, info.annotation))


def _params_rows(params: list[tuple[str, str, str]]) -> list[str]:
    if not params:
        return ["(no parameters)"]
    rows = ["| key | type | default |", "|---|---|---|"]
    rows += [f"| `{name}` | {kind} | {default} |" for name, kind, default in params]
    return rows


def _signature_params(factory: Any) -> list[tuple[str, str, str]]:
    out = []
    for p in inspect.signature(factory).parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        kind = (
            p.annotation.replace(" | None", " or none").replace(" | ", " or ")
            if isinstance(p.annotation, str)
            else _type(p.annotation)
        )
        if p.annotation is inspect.Parameter.empty:
            kind = "any"
        default = "**required**" if p.default is p.empty else _value(p.default)
        out.append((p.name, str(kind), default))
    return out


def _model_params(model: type[BaseModel]) -> list[tuple[str, str, str]]:
    return [
        (name, _type(info.annotation), _default(info)) for name, info in model.model_fields.items()
    ]


def render() -> str:
    """The whole reference, as Markdown.

    Returns:
        The text of ``docs/spec-reference.md``.
    """
    lines = [
        "# Spec reference",
        "",
        "<!-- generated by opar_sim/spec/reference.py: do not edit; regenerate with",
        f"     {COMMAND} -->",
        "",
        "Every key an experiment spec (TOML) accepts, from the models that validate it "
        "(`opar_sim/spec/schema.py` and the models it nests). Unknown keys are rejected. "
        "Tables are written as in TOML: `[limits]` is the `limits` table, `[[compare]]` an "
        "array of tables. Regenerate this page with "
        f"`{COMMAND}`.",
        "",
        "- [The spec](#the-spec)",
        "- [Simulated agent: agent.params](#simulated-agent-agentparams)",
        "- [Tasks: task.params](#tasks-taskparams)",
        "- [Controllers: controller.params](#controllers-controllerparams)",
        "",
        "## The spec",
        "",
    ]
    lines += list(_walk(ExperimentSpec, "", "top level"))
    lines += [
        "## Simulated agent: agent.params",
        "",
        f'`[agent.params]` of `kind = "simulated"`: {_doc(SimulatedAgentParams)}',
        "",
        *_model_rows(SimulatedAgentParams),
        "",
        "## Tasks: task.params",
        "",
        "`[task.params]` of each registered task (`[task] name = ...`).",
        "",
    ]
    for name in environments.names():
        if is_file_ref(name):  # a user's file loaded in this process: not part of the reference
            continue
        factory: Any = environments.registry.TASKS.factory(name)
        lines += [f"### `{name}`", "", _doc(factory), ""]
        params = getattr(factory, "Params", None)
        found = _model_params(params) if params is not None else _signature_params(factory)
        lines += [*_params_rows(found), ""]
    lines += [
        "### `[task.params.tools]`",
        "",
        f"Every task's `tools` table: {_doc(ToolParams)}",
        "",
        *_model_rows(ToolParams),
        "",
        "## Controllers: controller.params",
        "",
        "`[controller.params]` (or a `[[compare]]` entry's `params`) of each registered "
        "controller. A controller given as `path/to/file.py:ClassName` takes its class's "
        "keyword arguments.",
        "",
    ]
    for name in controllers.names():
        if is_file_ref(name):  # a user's file loaded in this process: not part of the reference
            continue
        law: Any = controllers.registry.CONTROLLERS.factory(name)
        lines += [f"### `{name}`", "", _doc(law), ""]
        lines += [*_params_rows(_signature_params(law)), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the reference, write it (``--write FILE``) or check a file is current (``--check``).

    Args:
        argv: The arguments (default: the command line's).

    Returns:
        0, or 1 when ``--check`` finds the file stale.
    """
    parser = argparse.ArgumentParser(prog="python -m opar_sim.spec.reference")
    parser.add_argument("--write", type=Path, metavar="FILE", help="write the reference here")
    parser.add_argument("--check", type=Path, metavar="FILE", help="exit 1 if FILE is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check is not None:
        current = args.check.read_text(encoding="utf-8") if args.check.is_file() else ""
        if current != text:
            print(f"{args.check} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    if args.write is not None:
        args.write.write_text(text, encoding="utf-8")  # a docs page of this checkout
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
