"""The progress figure: a large run streams its trajectories, the ones the columns give."""

from __future__ import annotations

from typing import Any

import pytest

from opar_sim.cli import main
from opar_sim.figures import convergence
from opar_sim.figures import run as run_figures
from opar_sim.spec.build import load_spec
from tests.conftest import EXPERIMENTS


def _drawn(monkeypatch: pytest.MonkeyPatch, spec: Any, out: Any) -> dict[str, list[Any]]:
    seen: dict[str, list[Any]] = {}
    real = convergence.convergence_figure

    def capture(traces: dict[str, list[Any]], title: str) -> Any:
        seen.update({k: list(v) for k, v in traces.items()})
        return real(traces, title)

    monkeypatch.setattr(convergence, "convergence_figure", capture)
    run_figures.write_run_figures(spec, out)
    return seen


def test_streamed_and_columnar_figures_draw_the_same_trajectories(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    spec_path = EXPERIMENTS / "compare_flight_booking.toml"
    args = ["run", str(spec_path), "--episodes", "12", "--workers", "1", "--out", str(out)]
    assert main(args) == 0
    spec = load_spec(spec_path).model_copy(update={"episodes": 12})
    columnar = _drawn(monkeypatch, spec, out)  # 12 episodes <= FIGURE_EPISODES: the columns
    monkeypatch.setattr(run_figures, "FIGURE_EPISODES", 5)  # now the run is "large": streamed
    streamed = _drawn(monkeypatch, spec, out)
    assert set(streamed) == set(columnar) and len(columnar) >= 2
    for name, traces in streamed.items():
        assert len(traces) == 5
        for a, b in zip(traces, columnar[name][:5], strict=True):
            assert (a.episode, a.trial) == (b.episode, b.trial)
            assert list(a.progress) == list(b.progress)
            assert list(a.estimate) == pytest.approx(list(b.estimate), nan_ok=True)
