"""The figures that must not mislead: per-controller convergence, the achievable front, phase."""

from __future__ import annotations

import numpy as np
from matplotlib.quiver import Quiver

from opar_sim.figures.convergence import CAPTION, DIP_NOTE, HOLD_RULE, convergence_figure
from opar_sim.figures.outcomes import achievable_front
from opar_sim.figures.signals import PHASE_EPISODES, median_path, phase_figure
from opar_sim.rundir import EpisodeTrace


def _trace(controller: str, episode: int, estimate: list[float]) -> EpisodeTrace:
    n = len(estimate)
    return EpisodeTrace(
        controller=controller,
        episode=episode,
        agent="simulated",
        step=np.arange(1, n + 1),
        time=np.arange(1, n + 1) * 10.0,
        progress=np.linspace(0.1, 1.0, n),
        estimate=np.array(estimate, float),
        signals=["continue"] * n,
        actions=["a"] * n,
    )


def test_the_oracle_is_left_out_of_the_achievable_front():
    names = ["pid", "threshold", "oracle", "open_loop"]
    cost = [60.0, 45.0, 40.0, 15.0]
    success = [0.7, 0.5, 0.9, 0.25]
    # with the oracle counted it dominates pid and threshold: the front would be open_loop, oracle
    assert achievable_front(names, cost, success) == [3, 2]
    assert achievable_front(names, cost, success, ["oracle"]) == [3, 1, 0]


def test_median_path_is_the_per_step_median_while_half_the_episodes_run():
    traces = [
        _trace("pid", 0, [0.2, 0.6, 1.0]),  # e = 0.8, 0.4, 0.0; Δe = -0.2, -0.4, -0.4
        _trace("pid", 1, [0.4, 0.4]),  # e = 0.6, 0.6; Δe = -0.4, 0.0
        _trace("pid", 2, [0.0]),  # e = 1.0; Δe = 0.0
    ]
    e, de = median_path(traces)
    # step 1: all three; step 2: two of three (≥ half); step 3: one of three (< half): cut
    np.testing.assert_allclose(e, [0.8, 0.5])
    np.testing.assert_allclose(de, [-0.2, -0.2])


def test_convergence_has_one_row_per_controller_and_states_the_hold_rule():
    traces = {
        "pid": [_trace("pid", k, [0.3, 0.6, 0.9]) for k in range(3)],
        "threshold": [_trace("threshold", k, [0.5, 1.0]) for k in range(3)],
        "oracle": [_trace("oracle", k, [1.0]) for k in range(2)],
    }
    fig = convergence_figure(traces, "t")
    assert len(fig.axes) == 6
    gids = [ax.get_gid() for ax in fig.axes]
    assert gids == [f"ctl--{n}--conv-{x}" for n in traces for x in ("step", "time")]
    assert CAPTION in fig.get_suptitle() and "over-confident" in CAPTION
    legend = fig.legends[0].get_title().get_text()
    assert HOLD_RULE in legend and DIP_NOTE in legend
    assert "held at its final value" in HOLD_RULE
    assert [ax.get_title(loc="left") for ax in fig.axes[::2]] == [
        "pid: 3 episodes",
        "threshold: 3 episodes",
        "oracle: 2 episodes",
    ]
    assert {ax.get_ylabel() for ax in fig.axes[::2]} == {"progress (0–1)"}


def test_phase_portrait_draws_directions_starts_ends_and_the_median_path():
    traces = {"pid": [_trace("pid", k, [0.2, 0.5, 0.9, 0.95]) for k in range(PHASE_EPISODES + 3)]}
    fig = phase_figure(traces, "t")
    ax = fig.axes[0]
    quivers = [c for c in ax.collections if isinstance(c, Quiver)]
    assert len(quivers) == PHASE_EPISODES + 1  # one law: its episodes drawn, and the median
    assert all(q.N == 3 for q in quivers)  # 4 steps: 3 arrows each
    starts = [ln for ln in ax.lines if ln.get_marker() == "o"]
    ends = [ln for ln in ax.lines if ln.get_marker() == "x"]
    assert len(starts) == len(ends) == PHASE_EPISODES
    assert (starts[0].get_xdata()[0], ends[0].get_xdata()[0]) == (0.8, 1 - 0.95)
    assert ax.get_xlabel() == "error e = 1 − δ_task (0–1)"
    assert "per loop iteration" in ax.get_ylabel()


def test_phase_portrait_of_several_laws_is_one_panel_where_they_stop_differently():
    traces = {
        "pid": [_trace("pid", k, [0.2, 0.5, 0.9, 1.0]) for k in range(4)],
        "open_loop": [_trace("open_loop", k, [0.2, 0.5]) for k in range(4)],
    }
    fig = phase_figure(traces, "t")
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert len([c for c in ax.collections if isinstance(c, Quiver)]) == 2  # the medians only
    stops = {
        ln.get_markerfacecolor(): ln.get_xdata()[0] for ln in ax.lines if ln.get_marker() == "X"
    }
    assert sorted(round(float(v), 6) for v in stops.values()) == [0.0, 0.5]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "pid (4 episodes): stops at median e = 0.00" in labels
    assert "open_loop (4 episodes): stops at median e = 0.50" in labels


def test_tuning_figures_draw_the_current_gains_and_log_axes_only_where_searched():
    from opar_sim.figures.tuning import tune_history, tune_landscape

    fig = tune_history([0, 1, 2], [0.7, 0.6, 0.65], "t", (0.52, "60 held-out episodes"))
    ax = fig.axes[0]
    current = [ln for ln in ax.lines if ln.get_label().startswith("current gains")]
    assert len(current) == 1 and list(current[0].get_ydata()) == [0.52, 0.52]
    # a linear parameter spanning a factor of 100 stays on a linear axis
    x, y = [0.01, 0.5, 1.0], [0.2, 1.0, 3.0]
    fig = tune_landscape(x, y, [0.5, 0.6, 0.7], ("a", "b"), (0.5, 1.0), "t", (False, True))
    assert (fig.axes[0].get_xscale(), fig.axes[0].get_yscale()) == ("linear", "log")
