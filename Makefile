# Developer shortcuts. `make check` is what to run before a commit: lint, format, types, the fast tests.
# The test tiers (docs/development.md): `make test-fast` needs nothing but `pip install -e '.[test]'`;
# `make test-integration` installs and starts Kafka, Prism, Flink, moto and chromium (scripts/test.sh);
# `scripts/test.sh` alone runs both tiers, and is what CI runs in a fresh virtual environment.
PYTHON ?= python3
PACKAGES := schemas transforms pipelines dashboards

.PHONY: check lint format typecheck test-fast test-integration test coverage

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
	$(PYTHON) -m pytest -q --tier fast -n 2 --dist loadgroup

test-integration:
	scripts/test.sh --tier integration -n 2 --dist loadgroup

test:
	scripts/test.sh

# Line and branch coverage of both tiers, the commands the tests start included (docs/development.md).
coverage:
	GROUNDWATCH_COVERAGE=1 scripts/test.sh
