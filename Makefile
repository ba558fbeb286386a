# The README's two commands. Each bootstraps .venv (torch first, from the local wheels,
# so nothing pulls another torch build), the project and its embedded data; stamps make
# a repeated setup do nothing that is already done.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.bench-installed
FETCHED := $(VENV)/.bench-data-fetched

.PHONY: run test setup lint bench-perf clean-results

run: setup
	$(BIN)/bench run --suite default

test: setup
	$(BIN)/ruff check bench mechanisms attacks tests
	$(BIN)/pytest

setup: $(INSTALLED) $(FETCHED)

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.14.1 torchvision==0.29.1
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(FETCHED): datasets/fetch.sh $(INSTALLED)
	bash datasets/fetch.sh $(BIN)/python
	touch $@

lint: setup
	$(BIN)/ruff check bench mechanisms attacks tests
	$(BIN)/ruff format --check bench mechanisms attacks tests

bench-perf: setup
	$(BIN)/pytest tests/perf --benchmark-enable --benchmark-only

clean-results:
	rm -rf .bench
