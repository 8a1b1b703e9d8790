"""The notice of a first batch run: said once when Numba compiles, never when it loads.

``compile_notice`` listens to Numba's ``numba:compile`` event, which fires only for a
kernel compiled (its cache missed), so a user whose kernels are cached sees nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import pytest

from opar_sim.engines.batch import COMPILING, compile_notice
from tests.conftest import SPEC


def test_said_once_however_many_kernels_compile():
    said: list[str] = []
    first = numba.njit(lambda x: x + 1)  # no cache: compiled at its first call
    second = numba.njit(lambda x: x * 2)
    with compile_notice(said.append):
        assert first(1) == 2
        assert second(3) == 6
        assert first(2.5) == 3.5  # a new signature: compiled again, still one notice
    assert said == [COMPILING]


def test_silent_when_nothing_is_compiled():
    kernel = numba.njit(lambda x: x - 1)
    assert kernel(1) == 0  # compiled before the notice listens
    said: list[str] = []
    with compile_notice(said.append):
        assert kernel(5) == 4
    assert said == []
    assert numba.njit(lambda x: x)(7) == 7  # and it no longer listens once left


@pytest.mark.slow  # compiles every row loop into an empty cache (about 10 s)
def test_the_cli_says_it_on_a_cold_cache_only(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "COLUMNS": "100"}

    def run(name: str) -> str:
        argv = [sys.executable, "-m", "opar_sim.cli", "run", SPEC, "--engine", "batch"]
        argv += ["--episodes", "20", "--out", str(tmp_path / name)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        return done.stdout + done.stderr

    assert COMPILING in run("cold")
    assert COMPILING not in run("warm")
    assert (
        COMPILING
        not in subprocess.run(
            [
                sys.executable,
                "-m",
                "opar_sim.cli",
                "run",
                SPEC,
                "--episodes",
                "5",
                "--out",
                str(tmp_path / "simpy"),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )


@pytest.mark.slow  # compiles every row loop into an empty cache (about 15 s)
def test_a_pooled_shootout_says_it_once(tmp_path):
    # the pool's workers would compile silently: the parent warms the cache first
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "COLUMNS": "100"}
    argv = [sys.executable, "-m", "opar_sim.cli", "shootout", SPEC, "--engine", "batch"]
    argv += ["--controllers", "pid,threshold", "--replicates", "2", "--trials-per-dim", "1"]
    argv += ["--train-episodes", "20", "--holdout-episodes", "20", "--finalists", "1"]
    argv += ["--workers", "2", "--out", str(tmp_path / "shootout")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert (done.stdout + done.stderr).count(COMPILING) == 1
