# The two commands of the README:
#   make run   - create .venv, install opar-sim, run the default experiment (offline)
#   make test  - install the dev extras, lint, type-check and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SPEC ?= experiments/flight_booking.toml

.PHONY: run test install dev lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[tune,dask]'

dev: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'

run: install
	$(BIN)/opar-sim run $(SPEC)

lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: dev
	$(BIN)/mypy

pytest: dev
	$(BIN)/pytest

test: lint typecheck pytest

bench: install
	$(BIN)/python benchmarks/throughput.py

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
