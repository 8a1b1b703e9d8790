"""The batch engine's episodes as ``episodes.jsonl`` rows: ``EpisodeRow``s of the one schema.

The rows are built column by column (one list per field, zipped), each an
``EpisodeRow`` (``rundir.schema``), so a type checker holds the fields to the
schema; they are the SimPy engine's rows (``rundir.episode_row``) field for field.
"""

from __future__ import annotations

from opar_sim.core.seeding import episode_seed
from opar_sim.core.types import Outcome
from opar_sim.engines.batch.engine import BatchEpisodes
from opar_sim.rundir import EpisodeRow, to_line
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
    judged = result.judged()  # the kernel's judge, once for both columns
    success = (judged == Outcome.SUCCESS.value).tolist()
    tokens = result.tokens.tolist()
    columns = zip(
        judged.tolist(),
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
    for i, values in enumerate(columns):
        outcome, ok, steps, answer, best, progress, complete, feasible = values[:8]
        prompt, completion, total, calls, seconds, tool_calls, replans = values[8:]
        row: EpisodeRow = {
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
        lines.append(to_line(row))
    return "".join(lines)
