# Developer shortcuts. `make check` is what to run before a commit: lint, format, types, the fast tests.
# The full suite (Kafka, Prism, chromium) is `scripts/test.sh`, which CI runs in a fresh virtual environment.
PYTHON ?= python3
PACKAGES := schemas transforms pipelines dashboards

.PHONY: check lint format typecheck test-fast test

check: lint typecheck test-fast

lint:
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

format:
	$(PYTHON) -m ruff check --fix .
	$(PYTHON) -m ruff format .

typecheck:
	$(PYTHON) scripts/typecheck.py

test-fast:
	$(PYTHON) -m pytest -q tests/unit -m "not prism and not kafka and not browser"

test:
	scripts/test.sh
