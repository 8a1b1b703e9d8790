"""Paths are data: unwritable outputs, markup, traversal by sweep values, plugins, GGUF files.

Plus the last-resort handler: an unexpected exception is one line, exit 70,
its traceback in ``error.log`` of the run directory, never on the terminal.
"""

from __future__ import annotations

import argparse
from importlib import metadata

import pytest

import controllers.registry as controller_registry
from opar_sim.cli.commands import run_cmd
from opar_sim.core.llm import BackendUnavailable
from opar_sim.llm.llamacpp_backend import resolve_model_path
from tests.conftest import EXPERIMENTS
from tests.reliability.conftest import cli, tally

SPEC = EXPERIMENTS / "flight_booking.toml"
RUN = ["run", SPEC, "--episodes", "2", "--workers", "1"]


def test_unwritable_outputs_are_one_line(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    long = tmp_path / ("d" * 300)
    cases = [
        (tmp_path / "proc-like", "/proc/opar-sim-test/run", 1, "cannot write /proc/opar-sim-test"),
        (None, a_file / "run", 1, "Not a directory"),
        (None, long, 1, "File name too long"),
        (None, a_file, 2, f"--out {a_file} exists and is not a directory"),
    ]
    for _, out, code, words in cases:
        status, _, err = cli([*RUN, "--out", out], capsys)
        assert status == code and err.count("\n") == 1 and words in err, err
        assert "Traceback" not in err
        tally("command line and environment", inputs_tried=1, answered_cleanly=1)


def test_markup_in_a_path_is_printed_as_it_is(tmp_path, capsys):
    out = tmp_path / "a[/]b[bold]c"
    status, printed, err = cli([*RUN, "--out", out], capsys)
    assert (status, err) == (0, "")
    assert f"run directory: {out}" in printed
    tally("command line and environment", inputs_tried=1, answered_cleanly=1)


@pytest.mark.parametrize("value", ["../../escaped", "/etc/passwd", "..", "[/]x", "a\x00b", "~root"])
def test_a_sweep_value_cannot_place_a_run_outside_out(tmp_path, capsys, value):
    spec = tmp_path / "s.toml"
    spec.write_text(
        SPEC.read_text() + f'\n[sweep]\n"description" = [{value!r}]\n'.replace("'", '"')
        if "\x00" not in value
        else SPEC.read_text() + '\n[sweep]\n"description" = ["a\\u0000b"]\n'
    )
    out = tmp_path / "sweep"
    status, _, err = cli(["sweep", spec, "--episodes", "1", "--workers", "1", "--out", out], capsys)
    assert (status, err) == (0, "")
    made = [p for p in tmp_path.rglob("*") if p.is_dir()]
    assert all(p == out or out in p.parents for p in made)
    points = [p for p in out.iterdir() if p.is_dir()]
    assert len(points) == 1 and points[0].parent == out
    tally("security", inputs_tried=1, answered_cleanly=1)


class _BrokenEntryPoint:
    name = "broken_plugin"

    def load(self):
        raise ImportError("No module named 'not_installed'")


def test_a_plugin_that_fails_to_load_is_listed_and_skipped(tmp_path, capsys, monkeypatch):
    registry = controller_registry.CONTROLLERS
    monkeypatch.setattr(registry, "plugins_loaded", False)
    monkeypatch.setattr(registry, "plugin_errors", {})
    monkeypatch.setattr(registry, "factories", dict(registry.factories))
    monkeypatch.setattr(registry, "_entry_points", lambda *, group: [_BrokenEntryPoint()])
    status, printed, err = cli(["list", "controllers"], capsys)
    assert (status, err) == (0, "")
    assert (
        "plugin 'broken_plugin' (controller) failed to load and is skipped: ImportError: "
        "No module named 'not_installed'"
    ) in printed
    status, _, err = cli([*RUN, "--out", tmp_path / "o"], capsys)
    assert (status, err) == (0, "")
    assert metadata  # the real entry points are read through importlib.metadata
    tally("security", inputs_tried=2, answered_cleanly=2, faults_injected=1)


@pytest.mark.parametrize("name", ["/etc/passwd", "/dev/zero", "model.bin", "fake.gguf"])
def test_the_gguf_model_must_be_a_gguf_file(tmp_path, name):
    path = tmp_path / name if not name.startswith("/") else name
    if name == "fake.gguf":
        path.write_bytes(b"not a model")
    with pytest.raises(BackendUnavailable) as info:
        resolve_model_path(str(path))
    assert str(path) in str(info.value)
    tally("security", inputs_tried=1, answered_cleanly=1)


def test_an_unexpected_error_is_one_line_exit_70_with_a_log(tmp_path, capsys, monkeypatch):
    def boom(args: argparse.Namespace, console: object) -> int:
        (args.out).mkdir(parents=True)
        raise RuntimeError("something unforeseen\nsecond line")

    monkeypatch.setattr(run_cmd, "run", boom)
    out = tmp_path / "o"
    status, _, err = cli([*RUN, "--out", out], capsys)
    assert status == 70
    assert err == (
        f"opar-sim: internal error: RuntimeError: something unforeseen; traceback in "
        f"{out / 'error.log'}\n"
    )
    assert "Traceback (most recent call last)" in (out / "error.log").read_text()
    tally("command line and environment", inputs_tried=1, answered_cleanly=1, faults_injected=1)
