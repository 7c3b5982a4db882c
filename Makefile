# Two commands from a clean clone: `make demo` and `make test`. Both set everything up.
PY ?= python3
UV_VERSION := 0.13.8
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench bench-locomo bench-irc bench-latency bench-leaks bench-faults clean

$(UV):
	$(PY) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PY)
	touch $@

setup: $(VENV)/.synced

demo: setup
	$(BIN)/groupmind demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

# Benchmarks: figures printed with the machine noted; not part of `make test`.
bench: bench-locomo bench-irc bench-latency bench-leaks bench-faults

bench-locomo: setup
	$(BIN)/python -m benchmarks.locomo $(ARGS)

clean:
	rm -rf $(VENV) .tools .groupmind .mypy_cache .ruff_cache .pytest_cache

bench-irc: setup
	$(BIN)/python -m benchmarks.irc $(ARGS)

bench-latency: setup
	$(BIN)/python -m benchmarks.latency $(ARGS)

bench-leaks: setup
	$(BIN)/python -m benchmarks.leaks $(ARGS)

bench-faults: setup
	$(BIN)/python -m benchmarks.faults $(ARGS)
