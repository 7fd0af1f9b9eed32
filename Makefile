PY ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test bench venv

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python
	$(BIN)/pip install -q -e .

demo: venv
	$(BIN)/python examples/quickstart.py

test: $(BIN)/python
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/python -m pytest -q -n 2 tests

# Each library runs in its own fresh process per round; e.g. make bench BENCH_ARGS="conv --rounds 5"
BENCH_ARGS ?= --rounds 3 --markdown benchmarks/latest.md --json benchmarks/latest.json

bench: venv
	$(BIN)/pip install -q "jax==0.10.2"
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)
