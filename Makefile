# `make test` and `make serve` work on a machine with Python 3.11 and make:
# they create .venv, install the project with its extras, then run.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LINT_PATHS := $(wildcard registry tests bench examples)
# the official MCP TypeScript SDK client the tests drive (pinned by its package-lock.json)
TS_CLIENT := tests/clients/ts
TS_CLIENT_STAMP := $(TS_CLIENT)/node_modules/.installed
# reference MCP servers behind `registry proxy` in tests/proxy (pinned by its package-lock.json)
UPSTREAMS := tests/proxy/upstreams
UPSTREAMS_STAMP := $(UPSTREAMS)/node_modules/.installed
# the TypeScript gate (an npm package; its tests run in pytest: tests/e2e_ts)
SDK_TS := sdk-ts
SDK_TS_STAMP := $(SDK_TS)/node_modules/.installed

CHROMIUM := /usr/bin/chromium

.PHONY: install test lint typecheck pytest test-clients sdk-ts browser serve openapi bench bench-ts conformance conformance-proxy bench-proxy bench-fixed-cost bench-table clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[server,mcp,proxy,fastmcp,dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

typecheck: $(STAMP)
	$(BIN)/mypy

$(TS_CLIENT_STAMP): $(TS_CLIENT)/package.json $(TS_CLIENT)/package-lock.json
	npm ci --prefix $(TS_CLIENT) --no-audit --no-fund --silent
	touch $@

test-clients: $(TS_CLIENT_STAMP) $(UPSTREAMS_STAMP)

$(UPSTREAMS_STAMP): $(UPSTREAMS)/package.json $(UPSTREAMS)/package-lock.json
	npm ci --prefix $(UPSTREAMS) --no-audit --no-fund --silent
	touch $@

# the MCP conformance suite and the Node 22 it needs (tests/proxy/test_conformance.py)
CONFORMANCE_STAMP := bench/conformance/node_modules/.installed
$(CONFORMANCE_STAMP): bench/conformance/package.json bench/conformance/package-lock.json
	npm ci --prefix bench/conformance --no-audit --no-fund --silent
	touch $@

$(SDK_TS_STAMP): $(SDK_TS)/package.json $(SDK_TS)/package-lock.json
	npm ci --prefix $(SDK_TS) --no-audit --no-fund --silent
	touch $@

# installed from its lockfile and built (dist/): tests/e2e_ts runs its tests and its example server
sdk-ts: $(SDK_TS_STAMP)
	npm run build --prefix $(SDK_TS) --silent


# The console's browser tests drive Debian's chromium (browser downloads are not possible).
# Installed here when missing and this is root with apt-get; otherwise those tests skip.
browser:
	@if [ ! -x $(CHROMIUM) ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium (apt-get) for the console's browser tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium fonts-dejavu-core >/dev/null) \
	      || echo "chromium could not be installed: the browser tests will skip"; \
	  else \
	    echo "no $(CHROMIUM), and no apt-get as root: the browser tests will skip"; \
	  fi; \
	fi

pytest: $(STAMP) $(TS_CLIENT_STAMP) $(UPSTREAMS_STAMP) $(CONFORMANCE_STAMP) sdk-ts browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

serve: $(STAMP)
	$(BIN)/registry serve

openapi: $(STAMP)
	$(BIN)/python -m registry.api.openapi > openapi.yaml

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/classify_bench.py

# the TypeScript gate's accepted declared call against a bare Ajv validate (not in make test)
bench-ts: sdk-ts
	node bench/ts_gate_bench.mjs $(BENCH_TS_ARGS)

# the MCP conformance suite against a gated server and its ungated twin (not in make test)
conformance: $(STAMP)
	$(BIN)/python bench/conformance_bench.py $(CONFORMANCE_ARGS)

# the suite against server-everything and the suite's own tools, directly and through
# `registry proxy` (make test runs one round against server-everything)
conformance-proxy: $(STAMP) $(UPSTREAMS_STAMP)
	$(BIN)/python bench/proxy_conformance_bench.py --rounds 3 $(CONFORMANCE_ARGS)

# the proxy's added latency and pass-through throughput against the same upstream direct
bench-proxy: $(STAMP) $(UPSTREAMS_STAMP)
	$(BIN)/python bench/proxy_bench.py $(BENCH_PROXY_ARGS)

# the fixed cost of a request against a bare Litestar app, loaded by wrk (Debian's; not in make test)
bench-fixed-cost: $(STAMP)
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && apt-get install -y -qq wrk >/dev/null; } \
	  || { echo "install wrk (apt-get install wrk)"; exit 2; }
	$(BIN)/python bench/fixed_cost_bench.py $(BENCH_FIXED_COST_ARGS)

# every row of issue 28's table against its baseline in the same run, short settings (~3 min;
# the fixed-cost rows need Debian's wrk, installed here as for bench-fixed-cost, else skipped)
bench-table: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && apt-get update -qq && apt-get install -y -qq wrk >/dev/null; } \
	  || echo "no wrk (apt-get install wrk): the fixed-cost rows will be skipped"
	$(BIN)/python bench/issue28_table.py $(BENCH_TABLE_ARGS)

clean:
	rm -rf $(VENV) .registry .pytest_cache .mypy_cache .ruff_cache $(TS_CLIENT)/node_modules $(UPSTREAMS)/node_modules bench/conformance/node_modules $(SDK_TS)/node_modules $(SDK_TS)/dist test-artifacts
