"""The run directory and its one owner: file names, rows, episode key, reading, writing, resume.

The one row schema (``EpisodeRow``, ``StepRow``: ``rundir.schema``) is what
every writer builds and every reader checks.  A batch run writes its steps as
columns (``steps.parquet``, and ``episodes.parquet`` beside ``episodes.jsonl``:
``rundir.columnar``); the readers here read either form.

Every part of opar-sim that writes or reads a run's files does it through
this package: the runner writes through ``RunWriter``; summary, analysis,
replay, calibration, tuning and the studies read through ``read_jsonl``,
``iter_episodes``, ``iter_steps`` and ``iter_traces``.
"""

from opar_sim.rundir.calls import call_lines, summarize, write_summary
from opar_sim.rundir.files import (
    CALLS_FILE,
    EPISODES_FILE,
    LLM_SUMMARY_FILE,
    MAX_INPUT_ENV,
    RUN_FILES,
    SPEC_FILE,
    STEPS_FILE,
    STEPS_PARQUET,
    SUMMARY_FILE,
    RunDirError,
    check_destination,
    check_run_files,
    default_run_dir,
    file_stem,
    input_ceiling,
    open_append,
    open_input,
    prepare_out_dir,
    read_blocks,
    read_input,
    read_json,
    read_jsonl,
    read_spec,
    unfinished_dir,
    write_bytes,
    write_json,
    write_jsonl,
    write_spec,
)
from opar_sim.rundir.manifest import MANIFEST_FILE, Repair
from opar_sim.rundir.readers import check_run_dir, iter_episodes, iter_steps, rows
from opar_sim.rundir.resume import refuse_other_spec, resume_point, resume_run
from opar_sim.rundir.rows import (
    EpisodeKey,
    episode_key,
    episode_lines,
    episode_row,
    step_row,
    to_line,
)
from opar_sim.rundir.schema import SCHEMA_VERSION, EpisodeRow, StepRow
from opar_sim.rundir.traces import (
    EpisodeTrace,
    UnusualTrace,
    find_trace,
    iter_traces,
    result_trace,
)
from opar_sim.rundir.writer import RunWriter, claim_whole_run, write_whole_run

__all__ = [
    "CALLS_FILE",
    "EPISODES_FILE",
    "LLM_SUMMARY_FILE",
    "MANIFEST_FILE",
    "MAX_INPUT_ENV",
    "RUN_FILES",
    "SCHEMA_VERSION",
    "SPEC_FILE",
    "STEPS_FILE",
    "STEPS_PARQUET",
    "SUMMARY_FILE",
    "EpisodeKey",
    "EpisodeRow",
    "EpisodeTrace",
    "Repair",
    "RunDirError",
    "RunWriter",
    "StepRow",
    "UnusualTrace",
    "call_lines",
    "check_destination",
    "check_run_dir",
    "check_run_files",
    "claim_whole_run",
    "default_run_dir",
    "episode_key",
    "episode_lines",
    "episode_row",
    "file_stem",
    "find_trace",
    "input_ceiling",
    "iter_episodes",
    "iter_steps",
    "iter_traces",
    "open_append",
    "open_input",
    "prepare_out_dir",
    "read_blocks",
    "read_input",
    "read_json",
    "read_jsonl",
    "read_spec",
    "refuse_other_spec",
    "result_trace",
    "resume_point",
    "resume_run",
    "rows",
    "step_row",
    "summarize",
    "to_line",
    "unfinished_dir",
    "write_bytes",
    "write_json",
    "write_jsonl",
    "write_spec",
    "write_summary",
    "write_whole_run",
]
