# The README's two commands. Each bootstraps .venv (torch first, from the local wheels,
# so nothing pulls another torch build), the project and its embedded data; stamps make
# a repeated setup do nothing that is already done.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.bench-installed
FETCHED := $(VENV)/.bench-data-fetched
BROWSER := $(VENV)/.bench-browser

.PHONY: run test test-slow test-all setup lint bench-perf perf perf-baseline clean-results

# The main job. Its board goes to $(RUN_BOARD) (ignored by git), so a run leaves the committed
# leaderboards/default/ alone; the run then compares its numbers with that committed board
# (timings left out: they measure whatever else the machine was doing) and says whether they
# agree. A disagreement is reported, not a failed run: floats can differ between CPU
# generations (docs/performance.md, "Same numbers on another host").
RUN_BOARD ?= .bench/boards/default
run: setup
	$(BIN)/bench run --suite default --jobs 2 --out $(RUN_BOARD)
	@out=$$($(BIN)/bench compare leaderboards/default/leaderboard.json \
	  $(RUN_BOARD)/leaderboard.json --no-cost); rc=$$?; echo "$$out" | head -n 1; \
	[ $$rc = 0 ] || echo "note: numbers differ from the committed board beyond tolerance;" \
	  "bench compare leaderboards/default/leaderboard.json $(RUN_BOARD)/leaderboard.json" \
	  "--exact --no-cost lists them"

# Two lanes of one test suite (pytest's `slow` marker, tests/conftest.py): `make test` is the
# fast lane, every test but the slow ones; `make test-slow` runs those (fresh bench processes
# end to end, Ray, signals, statistical sweeps over 20 seeds, trainings at default budgets);
# every test in tests/e2e/ is slow (its conftest.py marks them); CI (.ci/run) runs both.
PYTEST := $(BIN)/pytest -n auto --dist worksteal --durations=30

test: setup $(BROWSER)
	$(BIN)/ruff check bench mechanisms attacks tests
	$(PYTEST) -m "not slow"

test-slow: setup $(BROWSER)
	$(PYTEST) -m slow

test-all: test test-slow

setup: $(INSTALLED) $(FETCHED)

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.14.1 torchvision==0.29.1
	$(BIN)/python -m pip install --quiet -e '.[dev,ray]'
	touch $@

$(FETCHED): $(INSTALLED) $(wildcard bench/data/*.py)
	$(BIN)/bench data fetch
	touch $@

# Debian's Chromium for the end-to-end test of the HTML leaderboard (root only; without it
# that one test is skipped with a reason).
$(BROWSER): $(INSTALLED)
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null || \
	    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } || \
	    echo "note: apt-get could not install chromium: the HTML leaderboard browser test will be skipped"; \
	  else echo "note: chromium is not installed and needs root: the HTML leaderboard browser test will be skipped"; fi; }
	touch $@

lint: setup
	$(BIN)/ruff check bench mechanisms attacks tests
	$(BIN)/ruff format --check bench mechanisms attacks tests

bench-perf: setup
	$(BIN)/pytest tests/perf --benchmark-enable --benchmark-only

# Performance regression check: tests/perf against this machine's saved baseline
# ($(PERF_STORAGE)/<machine>/NNNN_baseline.json); fails when a benchmark's mean is more than
# PERF_TOLERANCE slower. The first run saves the baseline; `make perf-baseline` renews it.
PERF_STORAGE ?= .benchmarks
PERF_TOLERANCE ?= 50%
PERF := $(BIN)/pytest tests/perf --benchmark-enable --benchmark-only \
	--benchmark-storage=file://$(PERF_STORAGE)

perf: setup
	@if ls $(PERF_STORAGE)/*/*_baseline.json >/dev/null 2>&1; then \
		$(PERF) --benchmark-compare='*_baseline' --benchmark-compare-fail=mean:$(PERF_TOLERANCE); \
	else \
		echo "perf: no baseline for this machine yet; saving one"; \
		$(PERF) --benchmark-save=baseline; \
	fi

perf-baseline: setup
	rm -f $(PERF_STORAGE)/*/*_baseline.json
	$(PERF) --benchmark-save=baseline

clean-results:
	rm -rf .bench
