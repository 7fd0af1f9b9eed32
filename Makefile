PY ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test bench venv array-api

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

# The external array-API conformance suite (data-apis/array-api-tests, kept outside the repo)
# against arrax.numpy; prints the counts and writes the failing test ids to ARRAY_API_FAILURES.
# ARRAY_API_MODULE=jax.numpy runs it on the oracle; from a worktree pass VENV= and ARRAY_API_TESTS=.
ARRAY_API_TESTS ?= ../shared/array-api-tests
ARRAY_API_MODULE ?= arrax.numpy
ARRAY_API_FAILURES ?= /tmp/array-api-failures-$(ARRAY_API_MODULE).txt
ARRAY_API_ARGS ?= --max-examples 20 --derandomize --disable-deadline

array-api: $(BIN)/python
	$(BIN)/python -c "import pytest, pytest_jsonreport, hypothesis, ndindex" 2>/dev/null || \
	  $(BIN)/pip install -q pytest pytest-json-report "hypothesis>=6.151" "ndindex>=1.8"
	cd $(ARRAY_API_TESTS) && ARRAY_API_TESTS_MODULE=$(ARRAY_API_MODULE) JAX_ENABLE_X64=true \
	  PYTHONPATH=$(CURDIR) $(abspath $(BIN))/python -m pytest array_api_tests $(ARRAY_API_ARGS) \
	  -p no:cacheprovider -q -rf > $(ARRAY_API_FAILURES).log 2>&1; \
	  grep '^FAILED ' $(ARRAY_API_FAILURES).log | sed 's/^FAILED //; s/ - .*//' | sort > $(ARRAY_API_FAILURES); \
	  tail -n 1 $(ARRAY_API_FAILURES).log; echo "failures listed in $(ARRAY_API_FAILURES) (log: $(ARRAY_API_FAILURES).log)"
