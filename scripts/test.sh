#!/usr/bin/env bash
# The README's test command: install what the tests need, check lint, format and types, start the services the
# tests use, run them all. Run it inside a virtual environment of your own (.ci/run makes a fresh one).
# Arguments pass to pytest: `scripts/test.sh --tier integration` is `make test-integration`,
# `scripts/test.sh tests/unit/verify -q` runs one folder, and `--tier fast` skips the services' set-up.
# With GROUNDWATCH_COVERAGE=1 it measures line and branch coverage (`make coverage`) and prints the report.
# Everything it downloads is cached under ~/.cache (pip, Maven, Go); nothing is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

services=yes
[[ " $* " == *" --tier fast "* ]] && services=no

if [[ $services == yes ]]; then
  # Prism's build (go install) and chromium's install (apt) run while pip installs and the linters check.
  prepare_log="$(mktemp)"
  { scripts/build-prism.sh && scripts/install-chromium.sh; } >"$prepare_log" 2>&1 &
  prepare=$!
fi

python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e '.[test]'
make lint typecheck

if [[ $services == yes ]]; then
  if ! wait "$prepare"; then
    cat "$prepare_log" >&2
    echo "scripts/test.sh: building Prism or installing chromium failed (above)" >&2
    exit 1
  fi
  GROUNDWATCH_KAFKA_BOOTSTRAP="$(scripts/kafka.sh start)"
  export GROUNDWATCH_KAFKA_BOOTSTRAP
  trap 'scripts/kafka.sh stop >/dev/null || true' EXIT
fi

pytest=(python3 -m pytest --durations=15)
if [[ "${GROUNDWATCH_COVERAGE:-}" == 1 ]]; then
  rm -f .coverage .coverage.*
  pytest=(python3 -m coverage run -m pytest --durations=15)
fi
if (($#)); then
  "${pytest[@]}" "$@"
else
  # Both tiers, each on two workers (measured faster on two cores: docs/benchmarks.md). `--dist loadgroup`
  # keeps a module's tests on one worker, and the Flink tests and the demo lake's readers on one worker, so
  # that session set-up is made once; the workers share one broker, isolated by topic.
  "${pytest[@]}" --tier fast -n 2 --dist loadgroup
  "${pytest[@]}" --tier integration -n 2 --dist loadgroup
fi
if [[ "${GROUNDWATCH_COVERAGE:-}" == 1 ]]; then
  python3 -m coverage combine --quiet
  python3 -m coverage report --skip-covered --sort=cover | tail -n 25
fi
