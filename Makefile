PY ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: demo test bench venv array-api ecosystem fuzz longrun

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# An editable install writes no bytecode; compiling it once here keeps every later `import arrax`
# from recompiling ~400 modules (about 0.9 s) where PYTHONDONTWRITEBYTECODE is set (it is on these machines).
venv: $(BIN)/python
	$(BIN)/pip install -q -e .
	$(BIN)/python -m compileall -q arrax

demo: venv
	$(BIN)/python examples/quickstart.py

test: $(BIN)/python
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/python -m compileall -q arrax tests
	$(BIN)/python -m pytest -q -n 2 --dist worksteal --durations=40 tests

# A long differential-fuzzing campaign (tests/fuzzing.py); e.g. make fuzz FUZZ_ARGS="--programs 5000 --seed 7"
FUZZ_ARGS ?= --programs 2000 --jaxpr

fuzz: $(BIN)/python
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/python -m tests.fuzzing $(FUZZ_ARGS)

# Memory over long runs (tools/longrun.py): 1e6 jit calls, 1e5 eager ops, ... in arrax and in
# JAX 0.10.2, each in a fresh process; prints RSS / tracemalloc growth and live arrays side by
# side. e.g. make longrun LONGRUN_ARGS="--scale 0.1 --libs arrax --top 5"
LONGRUN_ARGS ?=

longrun: $(BIN)/python
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/python tools/longrun.py $(LONGRUN_ARGS)

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

# JAX libraries on arrax (not part of `make test`): builds two Python >= 3.12 venvs outside the
# repo, ECO_DIR/arrax (arrax + optax, chex, flax, equinox installed without jax) and ECO_DIR/jax
# (the same libraries on JAX 0.10.2), runs examples/ecosystem/*.py in both and compares their
# output line by line; ECO_ARGS=--optax-tests also runs optax's shipped tests in both.
ECO_PY ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)
ECO_DIR ?= $(HOME)/.cache/arrax-ecosystem
ECO_LIBS = optax==0.2.8 chex==0.1.92 flax==0.12.12 equinox==0.13.8 jaxtyping==0.3.11 wadler_lindig==0.1.8
ECO_DEPS = toolz absl-py typing_extensions msgpack rich PyYAML treescope pytest scikit-learn
ECO_ARGS ?=

ecosystem:
	test -x $(ECO_DIR)/arrax/bin/python || $(ECO_PY) -m venv $(ECO_DIR)/arrax
	$(ECO_DIR)/arrax/bin/pip install -q -e .
	$(ECO_DIR)/arrax/bin/pip install -q --no-deps $(ECO_LIBS)
	$(ECO_DIR)/arrax/bin/pip install -q $(ECO_DEPS)
	test -x $(ECO_DIR)/jax/bin/python || $(ECO_PY) -m venv $(ECO_DIR)/jax
	$(ECO_DIR)/jax/bin/pip install -q "jax==0.10.2" "jaxlib==0.10.2"
	$(ECO_DIR)/jax/bin/pip install -q --no-deps $(ECO_LIBS)
	$(ECO_DIR)/jax/bin/pip install -q $(ECO_DEPS) scipy
	$(ECO_DIR)/arrax/bin/python examples/ecosystem/compare.py \
	  --arrax-python $(ECO_DIR)/arrax/bin/python --jax-python $(ECO_DIR)/jax/bin/python $(ECO_ARGS)
