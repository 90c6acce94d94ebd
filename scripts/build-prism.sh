#!/usr/bin/env bash
# Prints the path of Beam's Prism runner binary, building it with `go install` on first use.
# Beam's own download of Prism from the web does not work offline; the Go module proxy serves its source.
# The binary is cached in ~/.cache/groundwatch/bin (never in the repo). Takes ~4 minutes cold on 2 cores.
set -euo pipefail

BEAM_VERSION="${GROUNDWATCH_BEAM_VERSION:-v2.77.0}"   # keep in step with the installed apache-beam
BIN_DIR="${GROUNDWATCH_BIN_DIR:-$HOME/.cache/groundwatch/bin}"
PRISM="$BIN_DIR/prism"

if [[ -x "$PRISM" ]]; then
  echo "$PRISM"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  echo "build-prism.sh: 'go' is not on PATH; install Go (apt-get install golang) and retry" >&2
  exit 1
fi
mkdir -p "$BIN_DIR"
# GOTOOLCHAIN=auto lets go fetch the toolchain the Beam module asks for from the module proxy.
GOBIN="$BIN_DIR" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" \
  go install "github.com/apache/beam/sdks/v2/go/cmd/prism@${BEAM_VERSION}" >&2
echo "$PRISM"
