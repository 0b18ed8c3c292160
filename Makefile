# Hyperpilot: the two commands are `make up` (run) and `make test` (every test).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TS_DIR := tests/mcp/ts
NODE_STAMP := $(TS_DIR)/node_modules/.installed
AXE_DIR := tests/ui/axe
AXE_STAMP := $(AXE_DIR)/node_modules/.installed

.PHONY: install browser prometheus node-deps ui-vendor up down status test test-unit lint typecheck reliability bench bench-tools clean

# One development install: every service, the simulated world and the dev tools, pinned by
# requirements.lock (compiled from pyproject.toml with `uv pip compile`).
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install -q --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	touch $(STAMP)

install: $(STAMP) browser prometheus node-deps

# The browser tests (tests/ui) drive Debian's chromium; no test tool downloads a browser.
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq chromium >/dev/null) \
		|| echo "chromium could not be installed: the browser tests (tests/ui) will be skipped"

# Debian's Prometheus server: `make up` starts it for the metrics route when it is installed
# (else workload-svc answers PromQL-lite itself, and says so); tests/e2e/test_prometheus.py
# needs it.
prometheus:
	@command -v prometheus >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends prometheus >/dev/null) \
		|| echo "prometheus could not be installed: the metrics route will answer PromQL-lite from workload-svc"

# The UI's terminal: xterm.js and its fit add-on, pinned by services/gateway/xterm's
# package-lock.json, copied (ES modules and the stylesheet, with xterm.js's license) into
# services/gateway/gateway/ui/vendor, which is committed: the UI has no build step and the gateway
# serves that directory like the UI's other files. Run it after changing the pin.
XTERM_DIR := services/gateway/xterm
UI_VENDOR := services/gateway/gateway/ui/vendor
ui-vendor:
	npm ci --prefix $(XTERM_DIR) --no-audit --no-fund --loglevel=error
	mkdir -p $(UI_VENDOR)
	sed '/^\/\/# sourceMappingURL=/d' $(XTERM_DIR)/node_modules/@xterm/xterm/lib/xterm.mjs > $(UI_VENDOR)/xterm.js
	sed '/^\/\/# sourceMappingURL=/d' $(XTERM_DIR)/node_modules/@xterm/addon-fit/lib/addon-fit.mjs > $(UI_VENDOR)/addon-fit.js
	cp $(XTERM_DIR)/node_modules/@xterm/xterm/css/xterm.css $(UI_VENDOR)/xterm.css
	cp $(XTERM_DIR)/node_modules/@xterm/xterm/LICENSE $(UI_VENDOR)/LICENSE.xterm.txt

# The TypeScript MCP SDK's client for tests/mcp/test_typescript_sdk.py, pinned by
# tests/mcp/ts/package-lock.json, and axe-core for the accessibility checks of tests/ui, pinned
# by tests/ui/axe/package-lock.json; without npm (or the registry) those tests are skipped.
node-deps:
	@if ! command -v npm >/dev/null; then \
		echo "npm is not installed: the TypeScript SDK conformance test and the axe-core checks will be skipped"; \
	else $(MAKE) -s --no-print-directory $(NODE_STAMP) $(AXE_STAMP) \
		|| echo "npm ci failed: the TypeScript SDK conformance test or the axe-core checks will be skipped"; fi

$(NODE_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	npm ci --prefix $(TS_DIR) --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

$(AXE_STAMP): $(AXE_DIR)/package.json $(AXE_DIR)/package-lock.json
	npm ci --prefix $(AXE_DIR) --no-audit --no-fund --loglevel=error
	touch $(AXE_STAMP)

lock:
	$(BIN)/uv pip compile pyproject.toml --extra dev -q -o requirements.lock

up: install
	$(BIN)/hyperpilot up

down: install
	$(BIN)/hyperpilot down

status: install
	$(BIN)/hyperpilot status

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy shared sim hyperpilot bench $(dir $(wildcard services/*/*/__init__.py))

# Two workers, each with its own PostgreSQL, NATS and stacks on free ports; a file's tests stay
# on one worker, so module-scoped stacks start once. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

test: install lint typecheck
	$(BIN)/pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile

test-unit: install
	$(BIN)/pytest -q tests/unit

reliability: install
	$(BIN)/pytest -q -m slow

# bench/k8s_api.py drives its GETs with wrk (Debian's package) so the server, not a Python
# client, is measured; without it the benchmark uses aiohttp and says so.
bench-tools:
	@command -v wrk >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq wrk >/dev/null) \
		|| echo "wrk could not be installed: bench/k8s_api.py will drive its GETs with aiohttp"

bench: install bench-tools
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .hyperpilot .pytest_cache .mypy_cache .ruff_cache

# The web UI's screenshots in docs/screenshots (README.md, docs/ui.md), taken by Playwright in
# Debian's chromium against the stack on the simulated AWS.
.PHONY: screenshots
screenshots:
	$(BIN)/python -m tests.ui.screenshots
