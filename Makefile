# The two set-up commands are `make run` and `make test`; both are idempotent and
# skip what is already done.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# Tests talk to the real PostgreSQL and Redis of this machine unless told otherwise.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/gcquiz
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST_WORKERS ?= 2
# The environment of every test command: the real services above, a fresh secret, no debug.
TEST_ENV = DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" \
	REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
	SECRET_KEY="$${SECRET_KEY:-$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(40))')}" \
	DEBUG=0
# The inner loop's subset: no browser, no processes of the test's own, no torch (markers in
# pyproject.toml; CONTRIBUTING.md). `make test` runs everything.
FAST_TESTS := not browser and not worker and not torch

.PHONY: run test test-fast lint typecheck messages screenshots chromium compose-smoke base-images bench bench-load bench-answer-cost bench-dashboard bench-gradebook bench-sync bench-labs labs-gpu-check vendor

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The local run includes the labs extra: its worker runs the labs on the CPU.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[labs]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,labs]'
	touch $@ $(VENV)/.installed-run

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Debian's Chromium for the browser tests (never a browser download of a test tool's own).
chromium:
	@test -x /usr/bin/chromium || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

run: $(VENV)/.installed-run
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py load_quiz
	DEBUG=1 $(BIN)/python manage.py load_labs
	DEBUG=1 $(BIN)/python manage.py generate_demo_data --students 200 --if-empty
	@echo "Serving on http://127.0.0.1:$(PORT)/ (web, worker, gpu-worker, beat; Ctrl-C stops them all)"
	@# Ctrl-C is how this run ends. The terminal's SIGINT reaches every process: this shell
	@# ignores it and waits while honcho stops the others, and honcho's 130 is no failure.
	trap '' INT; DEBUG=1 PORT=$(PORT) PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/honcho start --port $(PORT) || test $$? -eq 130

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The domain's services and selectors type-checked with Django's and DRF's stubs
# ([tool.mypy] in pyproject.toml; the plugin loads the settings, which connect to nothing).
typecheck: $(VENV)/.installed-dev
	$(TEST_ENV) $(BIN)/mypy

test: $(VENV)/.installed-dev node_modules/.installed chromium lint typecheck
# Models against migrations, on an in-memory database: the database DATABASE_URL names need
# not exist (the tests make their own), and where it did not Django warned it could not check it.
	$(TEST_ENV) DATABASE_URL=sqlite://:memory: $(BIN)/python manage.py makemigrations --check --dry-run
	$(TEST_ENV) $(BIN)/python -m pytest -n $(PYTEST_WORKERS)

# The fast subset for the inner loop while developing; not a replacement for `make test`.
test-fast: $(VENV)/.installed-dev
	$(TEST_ENV) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) -m "$(FAST_TESTS)"

# The production compose file built, booted and used through its proxy (docker/compose_smoke.py):
# needs Docker Engine 20.10+ with Compose v2; prints a table. Not part of `make test`.
compose-smoke: $(VENV)/.installed-dev
	$(BIN)/python docker/compose_smoke.py

# Stand-ins for python:3.11-slim, postgres:16 and redis:7 from Debian's packages, for hosts
# that cannot reach Docker Hub (needs debootstrap; docs/operations.md).
base-images:
	docker/base-images/build.sh

# Re-extract and compile the interface catalogues after changing translatable strings.
messages: $(VENV)/.installed-dev
	DEBUG=1 $(BIN)/python manage.py makemessages -l ru -l en --no-location --ignore=.venv --ignore=node_modules --ignore=tests --ignore=bench
	DEBUG=1 $(BIN)/python manage.py compilemessages --ignore=.venv

# The README's screenshots, from a fresh demo in a temporary folder (docs/screenshots/).
screenshots: $(VENV)/.installed-dev chromium
	$(BIN)/python scripts/screenshots.py

# Benchmarks print figures; they are not tests (docs/benchmarks.md records them).
bench: bench-load bench-answer-cost bench-dashboard bench-gradebook bench-sync

bench-load: $(VENV)/.installed-dev
	$(BIN)/python -m bench.load

bench-answer-cost: $(VENV)/.installed-dev
	$(BIN)/python -m bench.answer_cost

bench-dashboard: $(VENV)/.installed-dev
	$(BIN)/python -m bench.dashboard

bench-gradebook: $(VENV)/.installed-dev
	$(BIN)/python -m bench.gradebook

bench-sync: $(VENV)/.installed-dev
	$(BIN)/python -m bench.grade_sync

# The lab runner on chains of 64 and 256 blocks (DEVICE=cuda on a GPU host).
DEVICE ?= cpu
bench-labs: $(VENV)/.installed-dev
	$(BIN)/python -m bench.labs --device $(DEVICE)

# Every preset policy of every shipped lab on the CPU and on CUDA, side by side (a few
# minutes on one GPU; without CUDA it prints the CPU column). Exit status 1 when a graded
# figure differs by device.
labs-gpu-check: $(VENV)/.installed-run
	$(BIN)/python -m bench.labs_gpu_check

# Copy the pinned Chart.js build into the served static files (after changing its version).
vendor: node_modules/.installed
	cp node_modules/chart.js/dist/chart.umd.min.js node_modules/chart.js/dist/chart.umd.min.js.map analytics/static/analytics/vendor/
	cp node_modules/chart.js/LICENSE.md analytics/static/analytics/vendor/chart.js-LICENSE.md

# The real-Moodle acceptance run (docs/acceptance-moodle.md): not part of `make test` (it needs
# a Moodle 5.1 source tree, and installs PHP 8.2 and nginx from Debian's packages when missing).
# A fresh Moodle site (its own database and data root) and the tool (its own database) each run;
# prints a table of every step and fails when one did not pass.
MOODLE_SRC ?=
ACCEPTANCE_DIR ?= $(CURDIR)/var/acceptance
acceptance-moodle: $(VENV)/.installed-dev chromium
	@test -n "$(MOODLE_SRC)" || { echo "Give MOODLE_SRC=<Moodle 5.1 source tree> (docs/acceptance-moodle.md)"; exit 2; }
	MOODLE_SRC="$(MOODLE_SRC)" ACCEPTANCE_DIR="$(ACCEPTANCE_DIR)" $(BIN)/python -m acceptance.run

# Stops what a run left up (KEEP_RUNNING=1 or an interrupted run): nginx, php-fpm, the tool.
acceptance-moodle-stop:
	ACCEPTANCE_DIR="$(ACCEPTANCE_DIR)" acceptance/stop.sh

# The tool against Moodle's own quiz on the acceptance suite's Moodle (bench/vs_moodle.py,
# docs/benchmarks.md): sets both up as acceptance-moodle does, prints issue 21's table.
# BENCH_SECONDS per closed loop and side.
BENCH_SECONDS ?= 30
bench-vs-moodle: $(VENV)/.installed-dev chromium
	@test -n "$(MOODLE_SRC)" || { echo "Give MOODLE_SRC=<Moodle 5.1 source tree> (docs/acceptance-moodle.md)"; exit 2; }
	MOODLE_SRC="$(MOODLE_SRC)" ACCEPTANCE_DIR="$(ACCEPTANCE_DIR)" $(BIN)/python -m bench.vs_moodle --seconds $(BENCH_SECONDS)

.PHONY: acceptance-moodle acceptance-moodle-stop bench-vs-moodle
