# Two commands on a fresh machine with python3 and make: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
RUN_STAMP := $(VENV)/.installed-run

.PHONY: screenshots tracer run test test-sqlite test-postgres test-faults lint typecheck fmt lock bench-upload bench-browse bench-pages bench-secrets bench-findings bench-inspect bench-log clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The service, then the client package (client/: the author's and user's tool) whose
# `marketplace` command the service adds its commands to. In that order: reinstalling a
# service installed before the split removes the `marketplace` script it used to own.
$(RUN_STAMP): requirements.lock pyproject.toml client/pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e ./client
	touch $@

$(STAMP): requirements-dev.lock $(RUN_STAMP)
	$(BIN)/pip install --quiet --require-hashes -r requirements-dev.lock
	touch $@

# The inspection sandbox's tracer (docs/inspection.md): Debian's strace, installed when it is
# missing and this machine lets us (root with apt-get); without it inspections end `failed`
# with that reason and everything else works. bwrap comes with the project (a wheel).
tracer:
	@command -v strace >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace >/dev/null; } \
		|| echo "note: strace is not installed: inspections will end failed (docs/inspection.md)"

run: $(RUN_STAMP) tracer
	$(BIN)/marketplace serve

# The suite runs on SQLite (what `make run` uses) whatever MARKETPLACE_TEST_DATABASE_URL says,
# then on PostgreSQL under CI (CI=true) or when MARKETPLACE_TEST_POSTGRES_URL is set (or the
# older MARKETPLACE_TEST_DATABASE_URL); a PostgreSQL that cannot be reached fails under CI.
TEST_POSTGRES_DEFAULT := postgresql+asyncpg://postgres@127.0.0.1:5432/test
# loadgroup: tests marked xdist_group share a worker (the console's browser tests: one
# server and one browser); everything else is spread as before.
PYTEST := $(BIN)/python -m pytest -n 2 --dist loadgroup -q
# The URL shown in banners, without its password.
HIDE_PASSWORD := sed -E 's|(://[^:/@]*):[^@]*@|\1:***@|'

test: $(STAMP) tracer
	$(BIN)/ruff check src client tests bench
	$(BIN)/ruff format --check src client tests bench
	$(BIN)/lint-imports
	$(BIN)/mypy
	@$(MAKE) --no-print-directory test-sqlite
	@if [ -n "$$MARKETPLACE_TEST_POSTGRES_URL" ] || [ -n "$$MARKETPLACE_TEST_DATABASE_URL" ] \
		|| [ "$$CI" = "true" ]; then \
		$(MAKE) --no-print-directory test-postgres; \
	else \
		echo "=== PostgreSQL run skipped: set MARKETPLACE_TEST_POSTGRES_URL=$(TEST_POSTGRES_DEFAULT) (or CI=true) to enable it ==="; \
	fi

test-sqlite: $(STAMP)
	@echo "=== test run: SQLite (embedded default) ==="
	env -u MARKETPLACE_TEST_DATABASE_URL $(PYTEST)

test-postgres: $(STAMP)
	@url="$${MARKETPLACE_TEST_POSTGRES_URL:-$${MARKETPLACE_TEST_DATABASE_URL:-$(TEST_POSTGRES_DEFAULT)}}"; \
	echo "=== test run: PostgreSQL ($$(printf '%s' "$$url" | $(HIDE_PASSWORD))) ==="; \
	echo "MARKETPLACE_TEST_DATABASE_URL=<that URL> $(PYTEST)"; \
	MARKETPLACE_TEST_DATABASE_URL="$$url" $(PYTEST)

# The fault suite alone (it also runs inside `make test`): hostile inputs, schemathesis with
# every check against a live server, a hung database and S3, Redis down or hung, a worker
# killed mid-upload then DESIGN.md's invariants. PostgreSQL too when the variables say so.
test-faults: $(STAMP)
	@echo "=== fault suite: SQLite (embedded default) ==="
	env -u MARKETPLACE_TEST_DATABASE_URL $(PYTEST) -m fault
	@if [ -n "$$MARKETPLACE_TEST_POSTGRES_URL" ] || [ "$$CI" = "true" ]; then \
		url="$${MARKETPLACE_TEST_POSTGRES_URL:-$(TEST_POSTGRES_DEFAULT)}"; \
		echo "=== fault suite: PostgreSQL, scaled-out topology ==="; \
		MARKETPLACE_TEST_DATABASE_URL="$$url" $(PYTEST) -m fault; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check src client tests bench
	$(BIN)/ruff format --check src client tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format src client tests bench
	$(BIN)/ruff check --fix src client tests bench

# Regenerates the hash-checked locks (needs uv: `pip install uv`).
lock:
	uv pip compile --python-version 3.11 --generate-hashes --no-header --quiet requirements.in -o requirements.lock
	uv pip compile --python-version 3.11 --generate-hashes --no-header --quiet requirements-dev.in -o requirements-dev.lock
	cd client && uv pip compile --python-version 3.11 --generate-hashes --no-header --quiet requirements.in -o requirements.lock

bench-upload: $(STAMP)
	$(BIN)/python bench/bench_upload.py

# The portal's and the public pages' screenshots in docs/screenshots/, taken by their browser
# tests (Debian's Chromium: apt-get install -y chromium).
screenshots: $(STAMP)
	MARKETPLACE_DOCS_SCREENSHOTS=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/admin_console/browser/test_portal.py

bench-browse: $(STAMP)
	$(BIN)/python bench/bench_browse.py

# An uncached public plugin page (issue 29) at 100,000 plugins against the API's uncached
# detail, one request at a time (target: 10 ms of server time). BENCH_DATA_ROOT keeps the
# seeded catalogue (shared with `bench_browse.py --data-root`) for the next run.
bench-pages: $(STAMP)
	$(BIN)/python bench/bench_pages.py $(if $(BENCH_DATA_ROOT),--data-root $(BENCH_DATA_ROOT))

# The secret scan's false findings on ~100 MCP-server packages fetched with `npm pack`
# (cached in ~/.cache/marketplace-bench/npm).
bench-secrets: $(STAMP)
	$(BIN)/python bench/bench_secrets.py

# The rules on text a model reads (CONTRACT 14) on the labelled corpus beside the repository
# (../shared/data/model_text_corpus.json): recall and false positives per rule, time per
# 1,000 texts and on a 100 KiB SKILL.md (target under 50 ms), linearity on hostile text.
bench-findings: $(STAMP)
	$(BIN)/python bench/bench_findings.py

# Time per inspection in the sandbox against the same servers run plainly, and upload
# latency with inspection on and off (needs strace: `make tracer`).
bench-inspect: $(STAMP) tracer
	$(BIN)/python bench/bench_inspect.py

# An approval's append, proofs and checkpoints at 1,000,000 log entries (issue 27).
bench-log: $(STAMP)
	$(BIN)/python bench/bench_log.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
