# `make demo` and `make test` each set up .venv from scratch when needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# pip prints each package it collects and installs; no progress bars in logs
INSTALL := $(PIP) install --progress-bar off

.PHONY: demo test lint format install install-test bench clean

$(VENV)/bin/python:
	@echo "==> creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(INSTALL) --quiet --upgrade pip

$(VENV)/.installed-demo: pyproject.toml | $(VENV)/bin/python
	@echo "==> installing fncall-graph[demo]: the package, mcp-server-sqlite and llama-cpp-python"
	@echo "    (the first time, llama-cpp-python compiles llama.cpp: about 5 minutes on 2 cores)"
	$(INSTALL) -e '.[demo]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	@echo "==> installing fncall-graph with the test, postgres, demo and studio extras"
	@echo "    (the first time, llama-cpp-python compiles llama.cpp: about 5 minutes on 2 cores)"
	$(INSTALL) -e '.[test,postgres,demo,studio]'
	touch $@

install: $(VENV)/.installed-demo
install-test: $(VENV)/.installed-test

demo: install
	@echo "==> running the demo"
	$(VENV)/bin/fncall-graph demo

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: install-test
	@echo "==> system packages the tests need (PostgreSQL server binaries)"
	bash scripts/system-deps.sh
	@echo "==> ruff"
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@echo "==> pytest"
	$(VENV)/bin/pytest

bench: install-test
	for b in bench/*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist *.egg-info
