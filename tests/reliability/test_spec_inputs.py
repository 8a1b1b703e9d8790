"""Spec values and misspelt keys: every case exits 2 with one line naming the key.

Also a hypothesis fuzz of the spec loader: any TOML text gives a valid spec or
a ``SpecError``, never another exception.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import controllers
from opar_sim.core.errors import InputError
from opar_sim.spec.build import load_spec
from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally

BASE = (EXPERIMENTS / "flight_booking.toml").read_text()

# the shipped spec sets no PID parameter: the cases add a [controller.params] table
# (old text, new text, the exact message after "SPEC: ")
CASES = [
    (
        "[limits]",
        "[controller.params]\nkpp = 1.0\n\n[limits]",
        "controller.params.kpp: unknown key (did you mean 'kp'?)",
    ),
    (
        "[limits]",
        "[controller.params]\nkp = 'high'\n\n[limits]",
        "controller.params.kp: expected a number, got 'high'",
    ),
    (
        "[limits]",
        "[controller.params]\nkp = [1, 2]\n\n[limits]",
        "controller.params.kp: expected a number, got a list",
    ),
    (
        "[limits]",
        "[controller.params]\nkp = true\n\n[limits]",
        "controller.params.kp: expected a number, got True",
    ),
    (
        "[limits]",
        "[limits]\nmax_step = 3",
        "limits.max_step: unknown key (did you mean 'max_steps'?)",
    ),
    ("episodes = 300", "episods = 3", "episods: unknown key (did you mean 'episodes'?)"),
    ("episodes = 300", "episodes = 'many'", "episodes: expected a whole number, got 'many'"),
    ("episodes = 300", "episodes = 0", "episodes: must be at least 1, got 0"),
    ("seed = 0", "seed = -1", "seed: must be at least 0, got -1"),
    ("[agent]", "[agnt]", "agnt: unknown key (did you mean 'agent'?)"),
    (
        'name = "pid"',
        'name = "pdi"',
        "controller: unknown controller 'pdi' (did you mean 'pid'?) "
        f"(known: {', '.join(controllers.names())})",
    ),
    (
        "max_price = 600.0",
        "max_pric = 600.0",
        "task.params.max_pric: unknown key (did you mean 'max_price'?)",
    ),
    (
        "empty_rate = 0.3",
        "empty_rate = inf",
        "task.params.empty_rate: must be at most 1.0, got inf",
    ),
    (
        "fare_change_rate = 0.001",
        "fare_change_rate = nan",
        "task.params.fare_change_rate: must be a number, got nan",
    ),
    (
        "[task]",
        '[[task.wrappers]]\nname = "disturbance"\nrate = inf\n\n[task]',
        "task: wrappers[0].rate: must be a finite number, got inf",
    ),
    (
        "time_budget = 600.0",
        "time_budget = 'soon'",
        "limits.time_budget: expected a number, got 'soon'",
    ),
    ("[limits]", "[limit]", "limit: unknown key (did you mean 'limits'?)"),
    (
        "[task.params]",
        "[task.params]\nmax_prize = 1",
        "task.params.max_prize: unknown key (did you mean 'max_price'?)",
    ),
]

TUNE = """
[tune]
trails = 3

[tune.space]
"controller.params.kp" = { low = 0.2, high = 3.0 }
"""
TUNE_CASES = [
    (TUNE, "tune.trails: unknown key (did you mean 'trials'?)"),
    (
        TUNE.replace("trails = 3", "trials = 3").replace("high = 3.0", "high = inf"),
        "tune.space.controller.params.kp.high: must be a finite number, got inf",
    ),
    (
        TUNE.replace("trails = 3", "trials = 3").replace(
            "{ low = 0.2, high = 3.0 }", "{ low = 0.2, high = 0.8, integer = true }"
        ),
        "tune.space.controller.params.kp: an integer range needs a whole number in [0.2, 0.8]",
    ),
    (TUNE.replace("trails = 3", "trials = 'x'"), "tune.trials: expected a whole number, got 'x'"),
]


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("old", "new", "message"), CASES)
def test_a_bad_value_or_key_is_one_line_naming_it(tmp_path, capsys, old, new, message):
    assert old in BASE
    spec = _spec(tmp_path, BASE.replace(old, new, 1))
    status, _out, err = cli(
        ["run", spec, "--episodes", "1", "--workers", "1", "--out", tmp_path / "o"], capsys
    )
    assert (status, err) == (2, f"opar-sim: error: {spec}: {message}\n")
    assert not (tmp_path / "o").exists()  # nothing written
    tally("spec values and keys", inputs_tried=1, answered_cleanly=1)


@pytest.mark.parametrize(("extra", "message"), TUNE_CASES)
def test_a_bad_tune_table_is_one_line(tmp_path, capsys, extra, message):
    spec = _spec(tmp_path, BASE + extra)
    status, _, err = cli(["tune", spec, "--out", tmp_path / "o"], capsys)
    assert (status, err) == (2, f"opar-sim: error: {spec}: {message}\n")
    tally("spec values and keys", inputs_tried=1, answered_cleanly=1)


def test_deep_nesting_and_huge_seeds_are_clean(tmp_path, capsys):
    deep = _spec(tmp_path, 'name = "x"\na = ' + "[" * 5000 + "]" * 5000 + "\n")
    status, _, err = cli(["run", deep, "--out", tmp_path / "o"], capsys)
    assert (status, err) == (2, f"opar-sim: error: {deep}: tables nested too deeply\n")
    spec = _spec(tmp_path, BASE)
    status, _, err = cli(["run", spec, "--seed", str(2**64), "--out", tmp_path / "o"], capsys)
    assert status == 2
    assert err == f"opar-sim: error: command line: seed: must be at most {2**63 - 1}, got {2**64}\n"
    status, _, err = cli(["run", spec, "--seed", "2**64", "--out", tmp_path / "o"], capsys)
    assert status == 2 and err.count("\n") == 1 and "expected an integer" in err
    tally("spec values and keys", inputs_tried=3, answered_cleanly=3)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_KEYS = [
    "name",
    "episodes",
    "seed",
    "trials",
    "task",
    "agent",
    "controller",
    "limits",
    "compare",
    "guards",
    "sweep",
    "tune",
    "reflexion",
    "guardrail",
    "params",
    "kp",
    "max_steps",
    "space",
    "low",
    "high",
    "integer",
]


def _toml(value: object) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if value != value
            else (
                "inf"
                if value == float("inf")
                else "-inf"
                if value == float("-inf")
                else repr(value)
            )
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.encode("unicode_escape").decode().replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f'"{k}" = {_toml(v)}' for k, v in value.items()) + "}"


FUZZED = {"tried": 0}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=6), _values, max_size=5),
    st.binary(max_size=40),
)
def test_fuzzed_specs_give_a_spec_or_the_clean_error(tmp_path, data, noise):
    lines = [
        f'"{k}" = {_toml(v)}' if k != "name" else f"name = {_toml(v)}" for k, v in data.items()
    ]
    for text in ("\n".join(lines) + "\n", noise.decode("utf-8", "replace")):
        path = tmp_path / "fuzz.toml"
        path.write_text(text)
        try:
            load_spec(path)
        except InputError as exc:
            assert "\n" not in str(exc) and str(exc)
        tally("spec values and keys", inputs_tried=1, answered_cleanly=1)
