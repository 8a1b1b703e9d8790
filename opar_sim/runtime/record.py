"""A live agent's run, recorded as the same run directory a simulated run writes.

``LiveRecorder`` writes ``spec.json`` and the manifest's header when it is made, one
chunk per episode (``steps.jsonl``, ``episodes.jsonl``) through the one chunk writer
(``rundir.RunWriter``), and ``summary.json`` on ``close``; the rows are the one row
schema's (``rundir.schema``), so ``report``, ``replay``, ``advise`` and ``calibrate`` read
a live run as they read a simulated one.  A step row holds what the law read (the whole
evaluation and the ``ReflectContext``: ``time`` in the gate's time unit, ``plan_age``,
``plan_exhausted``, ``replans``), what the host did (tool, arguments' hash, tool errors,
the repeat count, cumulative tokens), the decision (signal, reason, ``give_up``, terms),
and the ground truth only where a harness gave it (a simulated task behind the tools).
The episode row holds the measured wall seconds.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opar_sim.core.controller import Truth
from opar_sim.core.outcome import TERMINATED, Ending, judge
from opar_sim.core.types import ControlSignal, Evaluation
from opar_sim.rundir import (
    EpisodeRow,
    RunWriter,
    StepRow,
    prepare_out_dir,
    to_line,
    write_spec,
)
from opar_sim.rundir.schema import fields_of
from opar_sim.running.runner import finish_run
from opar_sim.spec.schema import ExperimentSpec
from opar_sim.traces.runs import args_hash

if TYPE_CHECKING:
    from opar_sim.runtime.gate import Gate, HostStep, Verdict

LIVE_ENGINE = "live"  # the manifest's engine: a live agent's record, not a simulation
FAILURE = "failure"  # a live run judged by the host's grader alone (as an imported run)


def _ordered(row: dict[str, Any], row_type: type) -> Any:
    """``row`` in the schema's field order (every reader relies on it)."""
    order = [f.name for f in fields_of(row_type)]
    return {name: row[name] for name in order if name in row}


class LiveRecorder:
    """Writes a gate's episodes into a run directory, one chunk per finished episode."""

    def __init__(self, out: str | Path, spec: ExperimentSpec, *, agent: str = "live") -> None:
        """Start the run directory.

        Args:
            out: The directory (new, or empty of run files).
            spec: What the record says was run: the task, the limits and the law; the gate's
                law and gains replace its ``[controller]``.
            agent: The agent's name in the rows (the host's model, say).

        Raises:
            SpecError: when ``out`` already holds a run.
        """
        self.out = Path(out)
        self.spec = spec
        self.agent = agent
        self.written = 0
        self.rows: list[StepRow] = []
        self.wall_started = time.perf_counter()
        self.writer: RunWriter | None = None
        self.started = False

    def _start(self, gate: Gate) -> None:
        data = self.spec.model_dump()
        data["controller"] = {"name": gate.name, "params": dict(gate.params)}
        data["compare"] = []
        self.spec = ExperimentSpec.model_validate(data)
        prepare_out_dir(self.out)
        self.out.mkdir(parents=True, exist_ok=True)
        write_spec(self.out, self.spec, LIVE_ENGINE)
        self.writer = RunWriter([(self.spec, self.out)], None)
        self.started = True

    def begin(self, gate: Gate) -> None:
        """A new episode: its rows start empty and its wall clock at zero."""
        if not self.started:
            self._start(gate)
        self.rows = []
        self.wall_started = time.perf_counter()

    def step(
        self,
        gate: Gate,
        host: HostStep,
        evaluation: Evaluation | None,
        verdict: Verdict,
        now: float,
        counts: dict[str, int],
    ) -> None:
        """Keep one step's row (written with its episode)."""
        first = host.calls[0] if host.calls else None
        errors = [c.error for c in host.calls if c.error]
        row: dict[str, Any] = {
            "episode": gate.episode,
            "agent": self.agent,
            "controller": gate.name,
            "step": verdict.step,
            "time": now,
            "observation": host.text,
            "plan_id": gate.replans,
            "action": _label(first) if first else None,
            "tool": first.name if first else None,
            "args_hash": args_hash(dict(first.args)) if first else None,
            "tool_calls": len(host.calls),
            "repeat": max((gate.counts.repeat_of(c) for c in host.calls), default=0),
            "ok": None if first is None else not errors,
            "result": first.result if first else None,
            "tool_error": errors[0] if errors else None,
            "signal": verdict.signal.value,
            "reason": verdict.reason,
            "give_up": verdict.give_up,
            "terms": verdict.terms,
            "plan_age": gate.plan_age,
            "plan_exhausted": host.plan_exhausted,
            "replans": gate.replans,
            "tokens": counts["tokens"],
            "answer": host.answer,
            "attempt": 1,
        }
        if host.expert is not None:
            row["expert"] = host.expert
        if host.visible_progress is not None:
            row["visible_progress"] = host.visible_progress
        if evaluation is not None:
            row |= {
                "delta_task": evaluation.delta_task,
                "delta_act": evaluation.delta_act,
                "delta_plan": evaluation.delta_plan,
                "confidence": evaluation.confidence,
                "missing": list(evaluation.missing),
                "critique": evaluation.critique,
                "memory": evaluation.memory_update,
            }
        if host.truth is not None:
            row |= _truth_fields(host.truth)
        if len(host.calls) > 1:
            row["calls"] = [
                {"tool": c.name, "args_hash": args_hash(dict(c.args)), "error": bool(c.error)}
                for c in host.calls
            ]
        self.rows.append(_ordered(row, StepRow))

    def end(
        self,
        gate: Gate,
        *,
        success: bool | None,
        truth: Truth | None,
        stopped: str | None,
        answer: str | None,
    ) -> EpisodeRow:
        """Write the episode: its steps and its row, as one chunk of the run directory.

        The outcome is judged as the simulator judges it when the ground truth is known
        (``core.outcome.judge``); from the host's ``success`` alone it is ``success`` or
        ``failure`` (as an imported run's).
        """
        if self.writer is None:
            self._start(gate)
        assert self.writer is not None
        last = gate.last
        terminated = last is not None and last.signal is ControlSignal.TERMINATE
        give_up = bool(last and last.give_up)
        if truth is None and self.rows and "complete" in self.rows[-1]:
            final = self.rows[-1]
            truth = Truth(final["progress"], final["complete"], final["feasible"], 0.0)
        if truth is not None:
            ending = TERMINATED if terminated else Ending(truncated=stopped or "max_steps")
            outcome = judge(ending, truth.complete, give_up, truth.feasible)
            won = outcome == "success"
        else:
            won = bool(success)
            outcome = "success" if won else FAILURE
        handed = answer if answer is not None else (self.rows[-1]["answer"] if self.rows else "")
        row: dict[str, Any] = {
            "episode": gate.episode,
            "task": self.spec.task.name,
            "agent": self.agent,
            "controller": gate.name,
            "outcome": outcome,
            "success": won,
            "steps": len(self.rows),
            "answer": handed,
            "best_step": len(self.rows) or None,
            "feasible": None if truth is None else truth.feasible,
            "tokens": gate.tokens,
            "sim_seconds": float(gate.last_now or 0.0),
            "tool_calls": gate.counts.counts["calls"],
            "replans": gate.replans,
            "attempt": 1,
            "wall_seconds": time.perf_counter() - self.wall_started,
        }
        if truth is not None:
            row |= {"final_progress": truth.progress, "complete": truth.complete}
        episode: EpisodeRow = _ordered(row, EpisodeRow)
        steps = "".join(to_line(r) for r in self.rows)
        self.writer.write(0, (self.written, self.written + 1), to_line(episode), steps)
        self.written += 1
        self.rows = []
        return episode

    def close(self) -> Path:
        """Write ``summary.json`` from the episodes on disk; the run directory is complete.

        Returns:
            The run directory.
        """
        if self.writer is not None:
            self.writer.close()
            finish_run(self.spec, self.out)
        return self.out


def _label(call: Any) -> str:
    """The call as the simulator labels an action: ``tool(k=v,...)`` sorted by name."""
    if not call.args:
        return str(call.name)
    inner = ",".join(f"{k}={v}" for k, v in sorted(call.args.items()))
    return f"{call.name}({inner})"


def _truth_fields(truth: Truth) -> dict[str, Any]:
    """The ground-truth fields of a step row, from a harness's truth (``plan_quality`` unread)."""
    # no plan quality: a live agent's plan has none (replay refuses the oracle on it)
    return {"progress": truth.progress, "complete": truth.complete, "feasible": truth.feasible}
