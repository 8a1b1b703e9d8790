"""The claims' output directory: started once, resumed after a kill, never a dead end.

``opar-sim claims --out OUT`` runs every arm into ``OUT/runs/<n>-<spec>-seed<s>`` (one
ordinary run directory each, with its manifest) and writes ``claims.json`` (or
``recheck.json``) at the end.  ``claims_setup.json``, written first, keeps what the run
was started with and the command that started it.  A run killed midway leaves run
directories ``--resume`` finishes (``run_many`` keeps every chunk its manifest vouches
for); running the command again without ``--resume`` refuses in one line that names the
command that finishes it, and ``--resume`` with other flags names the command that
started it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from opar_sim.rundir import prepare_out_dir, read_json, write_json
from opar_sim.spec.schema import SpecError

SETUP_FILE = "claims_setup.json"


def _started(out: Path) -> bool:
    return (out / SETUP_FILE).is_file() or (out / "runs").is_dir()


def open_claims_dir(out: Path, setup: dict[str, Any], resume: bool) -> bool:
    """Make (or check) the claims' output directory; True when a started run is resumed.

    Args:
        out: The output directory.
        setup: What the run is started with: ``study`` (``claims`` or ``recheck``), the
            flags that change its results, and ``command``, the command line without
            ``--out`` and ``--resume`` (the messages add them).
        resume: ``--resume`` was given.

    Returns:
        Whether ``out`` holds a started run to finish (``run_many``'s ``resume``).

    Raises:
        SpecError: one line: ``out`` holds a run and ``--resume`` is missing (naming the
            command that finishes it), or it was started with other flags.
    """
    setup = json.loads(json.dumps(setup))  # as it reads back (tuples are lists)
    path = out / SETUP_FILE
    found = read_json(path) if path.is_file() else None
    before = found if isinstance(found, dict) else None
    started_by = str((before or setup).get("command", setup["command"]))
    command = f"{started_by} --out {shlex.quote(str(out))}"
    if not resume:
        if out.exists() and not out.is_dir():
            raise SpecError(f"--out {out} exists and is not a directory")
        if _started(out):
            study = str((before or setup).get("study", setup["study"]))
            state = (
                f"a finished claims run ({study}.json); to measure it again"
                if (out / f"{study}.json").is_file()
                else "a claims run that did not finish (killed?); to finish it"
            )
            raise SpecError(f"--out {out} holds {state}: {command} --resume (or another --out)")
        prepare_out_dir(out)
    elif before is not None:
        wanted = {k: v for k, v in setup.items() if k != "command"}
        if {k: v for k, v in before.items() if k != "command"} != wanted:
            raise SpecError(
                f"--resume: {out} was started by `{command}`, not with these flags: "
                f"{command} --resume (or another --out)"
            )
        return True
    elif path.exists():
        raise SpecError(f"--resume: {path} is damaged (not a JSON object); remove it to resume")
    resumed = _started(out)  # a run directory without its setup (an older opar-sim): resumed
    out.mkdir(parents=True, exist_ok=True)
    write_json(path, setup)
    return resumed
