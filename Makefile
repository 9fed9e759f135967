# `make demo` and `make test` each set up .venv from scratch when needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# pip prints each package it collects and installs; no progress bars in logs
INSTALL := $(PIP) install --progress-bar off

.PHONY: demo test lint format install install-test install-server serve-cluster bench clean

$(VENV)/bin/python:
	@echo "==> creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(INSTALL) --quiet --upgrade pip

# llama.cpp compiled for the build machine's own CPU (pip's default, GGML_NATIVE) crashes
# with SIGSEGV on its first prompt on some x86 CPUs (seen on AVX-512 FP16 ones). A portable
# build (AVX2, no AVX-512) runs everywhere. It is built once, outside pip's cache (which
# would hand back a native build), and kept for later installs.
LLAMA_VERSION := 0.3.36
WHEELS ?= $(HOME)/.cache/fncall-graph/wheels
LLAMA_WHEEL := $(WHEELS)/.llama-cpp-python-$(LLAMA_VERSION)-portable
LLAMA := --find-links $(WHEELS) 'llama-cpp-python[server]==$(LLAMA_VERSION)'

$(LLAMA_WHEEL): | $(VENV)/bin/python
	@echo "==> building llama-cpp-python $(LLAMA_VERSION) for any x86-64 CPU with AVX2 (once; kept in $(WHEELS))"
	@echo "    (llama.cpp compiles: about 5 minutes on 2 cores)"
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) wheel --no-deps --no-cache-dir --progress-bar off \
		-w $(WHEELS) 'llama-cpp-python==$(LLAMA_VERSION)'
	touch $@

$(VENV)/.installed-demo: pyproject.toml $(LLAMA_WHEEL) | $(VENV)/bin/python
	@echo "==> installing fncall-graph[demo]: the package, mcp-server-sqlite and llama-cpp-python"
	$(INSTALL) -e '.[demo]' $(LLAMA)
	touch $@

$(VENV)/.installed-test: pyproject.toml $(LLAMA_WHEEL) | $(VENV)/bin/python
	@echo "==> installing fncall-graph with the test, postgres, demo and studio extras"
	$(INSTALL) -e '.[test,postgres,demo,studio]' $(LLAMA)
	touch $@

install: $(VENV)/.installed-demo
install-test: $(VENV)/.installed-test

# LangGraph Server on PostgreSQL + Redis lives in a virtual environment of its own:
# langgraph-runtime-pg pins an older langgraph-api than `langgraph dev` (the studio extra).
SERVER_VENV ?= .venv-server
$(SERVER_VENV)/.installed: pyproject.toml
	@echo "==> installing fncall-graph[server] into $(SERVER_VENV): langhost, langgraph-runtime-pg"
	test -x $(SERVER_VENV)/bin/python || $(PYTHON) -m venv $(SERVER_VENV)
	$(SERVER_VENV)/bin/python -m pip --disable-pip-version-check install --progress-bar off \
		--quiet --upgrade pip
	$(SERVER_VENV)/bin/python -m pip --disable-pip-version-check install --progress-bar off \
		-e '.[server]'
	touch $@

install-server: $(SERVER_VENV)/.installed

# the project's graphs on 2 replicas over a private PostgreSQL and Redis; Ctrl-C stops all
REPLICAS ?= 2
serve-cluster: install-server
	bash scripts/system-deps.sh
	$(SERVER_VENV)/bin/python scripts/serve_cluster.py run --replicas $(REPLICAS)

demo: install
	@echo "==> running the demo"
	$(VENV)/bin/fncall-graph demo

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# MCP reference servers from npm, for the tests (node is on the machine)
EVERYTHING_VERSION := 2026.8.31
MCP_SERVERS := .mcp-servers
EVERYTHING := $(MCP_SERVERS)/node_modules/.bin/mcp-server-everything

$(EVERYTHING):
	@echo "==> MCP reference servers from npm: @modelcontextprotocol/server-everything $(EVERYTHING_VERSION)"
	npm install --no-audit --no-fund --loglevel=error --prefix $(MCP_SERVERS) \
		'@modelcontextprotocol/server-everything@$(EVERYTHING_VERSION)'

test: install-test install-server $(EVERYTHING)
	@echo "==> system packages the tests need (PostgreSQL server binaries, Redis, Graphviz)"
	bash scripts/system-deps.sh
	@echo "==> ruff"
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@echo "==> pytest"
	$(VENV)/bin/pytest

bench: install-test install-server
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(SERVER_VENV) build dist *.egg-info
