# The few verbs a contributor needs. Each creates the virtual environment on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench lint install

$(BIN)/canary: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# an editable install leaves the project uncompiled; with PYTHONDONTWRITEBYTECODE set, every
	@# command would compile it again (about 50 ms of each `canary status`)
	$(BIN)/python -m compileall -q canary migrations > /dev/null
	@touch $(BIN)/canary

install: $(BIN)/canary

demo: $(BIN)/canary
	$(BIN)/canary demo

test: $(BIN)/canary
	$(BIN)/python -m pytest

bench: $(BIN)/canary
	for script in tests/bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

lint: $(BIN)/canary
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/ruff check canary tests
	$(BIN)/mypy
