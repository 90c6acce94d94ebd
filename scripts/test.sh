#!/usr/bin/env bash
# The README's test command: install what the tests need, check lint, format and types, start the services the
# tests use, run them all. Run it inside a virtual environment of your own (.ci/run makes a fresh one).
# Arguments pass to pytest: `scripts/test.sh --tier integration` runs that tier,
# `scripts/test.sh tests/unit/verify -q` runs one folder, and `--tier fast` skips the services' set-up.
# With GROUNDWATCH_COVERAGE=1 it measures line and branch coverage (`make coverage`) and prints the report.
# Everything it downloads is cached under ~/.cache (pip, uv, Maven, Go); nothing is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

services=yes
[[ " $* " == *" --tier fast "* ]] && services=no

# The run's temporary files (pytest's folders, Beam's staging folders, the browsers' profiles, the runner logs of
# monitors a test kills; not the JVMs', which ignore TMPDIR) go in one folder: removed when the run passes, kept
# and named when it fails, with the failed tests' folders.
run_tmp="$(mktemp -d "${TMPDIR:-/tmp}/groundwatch-test.XXXXXX")"
export TMPDIR="$run_tmp"

prepare="" kafka=no
steps=()
took() { # took NAME: record how long since the last step (bash's SECONDS), printed at the end
  steps+=("$1 $((SECONDS / 60)) min $((SECONDS % 60)) s")
  SECONDS=0
}
stop() {
  local status=$?
  if ((${#steps[@]})); then printf 'scripts/test.sh: %s\n' "${steps[@]}"; fi
  if [[ -n $prepare ]]; then kill "$prepare" 2>/dev/null || true; fi
  if [[ $kafka == yes ]]; then scripts/kafka.sh stop >/dev/null || true; fi
  if ((status == 0)); then
    rm -rf "$run_tmp" || true # a process still writing there must not fail a passing run
  else
    echo "scripts/test.sh: the run's temporary files are kept in $run_tmp" >&2
  fi
}
trap stop EXIT

if [[ $services == yes ]]; then
  # Prism's build (go install) and chromium's install (apt) run while the package installs, the linters check
  # and, with no arguments, the fast tier runs: none of those needs them.
  prepare_log="$(mktemp)"
  { scripts/build-prism.sh && scripts/install-chromium.sh; } >"$prepare_log" 2>&1 &
  prepare=$!
fi

# uv installs the same requirements as pip, from the same index, in seconds rather than a minute and a half.
# It needs the virtual environment the README asks for; outside one, pip does the install. Like pip, it is asked
# to compile the packages' bytecode: where PYTHONDONTWRITEBYTECODE is set, as here, every Python process (each
# test's command, each Beam worker) would otherwise compile Beam again, about 3.4 s of CPU each.
python3 -m pip install --quiet uv
if [[ -n ${VIRTUAL_ENV:-} ]]; then
  python3 -m uv pip install --quiet --compile-bytecode -e '.[test]'
else
  python3 -m pip install --quiet -e '.[test]'
fi
make lint typecheck
took "install, lint and types:"

pytest=(python3 -m pytest --durations=15)
if [[ "${GROUNDWATCH_COVERAGE:-}" == 1 ]]; then
  rm -f .coverage .coverage.*
  pytest=(python3 -m coverage run -m pytest --durations=15)
fi

start_services() {
  if ! wait "$prepare"; then
    cat "$prepare_log" >&2
    echo "scripts/test.sh: building Prism or installing chromium failed (above)" >&2
    exit 1
  fi
  prepare=""
  GROUNDWATCH_KAFKA_BOOTSTRAP="$(scripts/kafka.sh start)"
  export GROUNDWATCH_KAFKA_BOOTSTRAP
  kafka=yes
  took "waiting for Prism and chromium, starting Kafka:"
}

if (($#)); then
  [[ $services == yes ]] && start_services
  "${pytest[@]}" "$@"
else
  # Both tiers, each on two workers (measured faster on two cores: docs/benchmarks.md). `--dist loadgroup`
  # keeps a module's tests on one worker, and the Flink tests and the demo lake's readers on one worker, so
  # that session set-up is made once; the workers share one broker, isolated by topic.
  "${pytest[@]}" --tier fast -n 2 --dist loadgroup
  took "fast tier:"
  start_services
  "${pytest[@]}" --tier integration -n 2 --dist loadgroup
  took "integration tier:"
fi
if [[ "${GROUNDWATCH_COVERAGE:-}" == 1 ]]; then
  python3 -m coverage combine --quiet
  python3 -m coverage report --skip-covered --sort=cover | tail -n 25
fi
