# The few verbs a contributor needs. Each creates the virtual environment on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Test workers (pytest-xdist), more than the cores: much of the suite waits on daemons, sockets
# and timers rather than computing. The quick subset computes more, but its tests still wait on
# loopback sockets and threads a good part of the time: it takes as many (each pays its own
# start: collecting, the migrated template, lingua's models once needed).
# `make test WORKERS=1` runs in one process.
CORES := $(shell nproc 2>/dev/null || echo 2)
WORKERS ?= $(shell echo $$(( $(CORES) * 2 )))
CHECK_WORKERS ?= $(WORKERS)
# pytest keeps each test module compiled (asserts rewritten) in __pycache__ when Python may write
# bytecode: a variable that forbids it would make every run and every worker compile them again.
# --dist loadscope: a module's tests run in one worker, in their order (its module-scoped set-up
# once, not once per worker).
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest --dist loadscope
# The inner loop: no process, no PostgreSQL, no browser, no real-time waits.
QUICK := not slow and not postgres and not chromium

.PHONY: demo test check bench lint install

$(BIN)/canary: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# an editable install leaves the project uncompiled; with PYTHONDONTWRITEBYTECODE set, every
	@# command would compile it again (about 50 ms of each `canary status`)
	$(BIN)/python -m compileall -q canary migrations > /dev/null
	@# the tests too, as pytest compiles them (asserts rewritten): else each worker of the first
	@# `make check` compiles every module again (a collection error shows in the run that follows)
	$(PYTEST) --collect-only -q -p no:cacheprovider > /dev/null 2>&1 || true
	@# hypothesis's table of the characters text can hold, kept in .hypothesis/: else each worker
	@# of the first `make check` that draws text computes it again (about a second each)
	$(BIN)/python -c "from hypothesis import given, settings, strategies as st; \
		settings(max_examples=1, database=None)(given(st.text())(lambda s: None))()"
	@touch $(BIN)/canary

$(VENV)/.lint-tools: $(BIN)/canary
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

install: $(BIN)/canary

demo: $(BIN)/canary
	$(BIN)/canary demo

# The whole suite, SQLite and PostgreSQL (CANARY_REQUIRE_POSTGRES=1: fail, not skip, without it).
test: $(BIN)/canary
	$(PYTEST) -n $(WORKERS)

# The tests that need no service and no process, in under a minute; property tests try a
# quarter of their examples (all of them in `make test`).
check: $(BIN)/canary
	$(PYTEST) -n $(CHECK_WORKERS) -m "$(QUICK)" --hypothesis-profile=quick

bench: $(BIN)/canary
	for script in tests/bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

lint: $(VENV)/.lint-tools
	$(BIN)/ruff check canary client tests
	$(BIN)/mypy
