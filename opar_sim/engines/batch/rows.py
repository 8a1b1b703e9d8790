"""The batch engine's episodes as ``episodes.jsonl`` rows, in the SimPy engine's format."""

from __future__ import annotations

from opar_sim.core.seeding import episode_seed
from opar_sim.engines.batch.engine import BatchEpisodes
from opar_sim.rundir import to_line
from opar_sim.spec.schema import ExperimentSpec


def episode_text(spec: ExperimentSpec, controller: int, start: int, result: BatchEpisodes) -> str:
    """The episodes.jsonl lines of a batch of episodes, in the SimPy engine's row format.

    Args:
        spec: The spec they ran from.
        controller: The controller's index in ``spec.controller_list()``.
        start: The first episode's number.
        result: What ``run_batch`` returned.

    Returns:
        One JSON line per episode.
    """
    name = spec.controller_list()[controller].name
    entropy = episode_seed(spec.seed, 0).entropy
    seed = entropy if isinstance(entropy, int) else 0
    success = result.success.tolist()
    tokens = result.tokens.tolist()
    columns = zip(
        result.outcomes(),
        success,
        result.steps.tolist(),
        result.answers(),
        result.best_step.tolist(),
        result.progress.tolist(),
        result.complete.tolist(),
        result.feasible.tolist(),
        result.prompt_tokens.tolist(),
        result.completion_tokens.tolist(),
        tokens,
        result.llm_calls.tolist(),
        result.sim_seconds.tolist(),
        result.tool_calls.tolist(),
        result.replans.tolist(),
        strict=True,
    )
    lines = []
    for i, row in enumerate(columns):
        outcome, ok, steps, answer, best, progress, complete, feasible = row[:8]
        prompt, completion, total, calls, seconds, tool_calls, replans = row[8:]
        lines.append(
            to_line(
                {
                    "episode": start + i,
                    "seed": seed,
                    "task": spec.task.name,
                    "agent": "simulated",
                    "controller": name,
                    "outcome": outcome,
                    "success": ok,
                    "steps": steps,
                    "answer": answer,
                    "best_step": best if steps else None,
                    "final_progress": progress,
                    "complete": complete,
                    "feasible": feasible,
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "tokens": total,
                    "llm_calls": calls,
                    "sim_seconds": seconds,
                    "tool_calls": tool_calls,
                    "replans": replans,
                    "sub_tokens": 0,
                    "attempt": 1,
                }
            )
        )
    return "".join(lines)
