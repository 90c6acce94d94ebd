#!/usr/bin/env bash
# The README's test command: install what the tests need, check lint, format and types, start the services the
# tests use, run them all. Run it inside a virtual environment of your own (.ci/run makes a fresh one).
# Arguments pass to pytest: `scripts/test.sh --tier integration` is `make test-integration`,
# `scripts/test.sh tests/unit/verify -q` runs one folder. With GROUNDWATCH_COVERAGE=1 it measures line and
# branch coverage (`make coverage`) and prints the report.
# Everything it downloads is cached under ~/.cache (pip, Maven, Go); nothing is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e '.[test]'
make lint typecheck
if [[ " $* " != *" --tier fast "* ]]; then
  scripts/build-prism.sh >/dev/null          # Beam's Prism runner for the streaming tests (go install, cached)
  scripts/install-chromium.sh >/dev/null     # Debian's chromium for the dashboard tests
  GROUNDWATCH_KAFKA_BOOTSTRAP="$(scripts/kafka.sh start)"
  export GROUNDWATCH_KAFKA_BOOTSTRAP
  trap 'scripts/kafka.sh stop >/dev/null || true' EXIT
fi

if [[ "${GROUNDWATCH_COVERAGE:-}" == 1 ]]; then
  rm -f .coverage .coverage.*
  python3 -m coverage run -m pytest --durations=15 "$@"
  python3 -m coverage combine --quiet
  python3 -m coverage report --skip-covered --sort=cover | tail -n 25
else
  python3 -m pytest --durations=15 "$@"
fi
