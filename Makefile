# One entry point per job. Every target creates .venv and installs the project first if needed.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# Schemathesis needs a newer jsonschema-rs than langgraph-api accepts: it gets its own virtualenv.
ST_VENV ?= .venv-schemathesis
GOAL ?= Increase Store 5's accessory attach rate by 20% within 60 days

.PHONY: install demo test lint bench eval-evolution clean

$(BIN)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,local]"
	test -x $(ST_VENV)/bin/python || $(PYTHON) -m venv $(ST_VENV)
	$(ST_VENV)/bin/python -m pip install -q "schemathesis>=4.3,<5"
	touch $@

install: $(BIN)/.installed

# The goal solved with its live call tree, then the whole self-evolution loop on the demo tenants.
demo: install
	$(BIN)/master-agent solve "$(GOAL)" --tenant demo-retail
	$(BIN)/master-agent demo loop

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

bench: install
	PYTHONPATH=. $(BIN)/python benchmarks/run.py

eval-evolution: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_evolution.py

clean:
	rm -rf $(VENV) $(ST_VENV) .master-agent .pytest_cache .mypy_cache .ruff_cache
