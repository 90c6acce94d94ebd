#!/usr/bin/env bash
# A local Apache Kafka 4.x broker (KRaft, one node, 127.0.0.1) for development and tests.
#   scripts/kafka.sh start    # fetch jars with mvn on first use (cached), start, print 127.0.0.1:PORT when ready
#   scripts/kafka.sh status   # print the address if it answers (exit 0), else exit 1
#   scripts/kafka.sh stop     # stop it gracefully (data kept; `purge` also deletes the data)
# Environment: GROUNDWATCH_KAFKA_HOME (state folder), GROUNDWATCH_KAFKA_PORT (client port, default 39092).
set -euo pipefail
if [[ "${1:-}" == start ]] && { ! command -v mvn >/dev/null || ! command -v java >/dev/null; } && [[ $EUID -eq 0 ]]; then
  # A fresh Debian machine: Kafka 4 needs Java 17+ and mvn to fetch it.
  { apt-get update -qq && apt-get install -y -qq maven openjdk-17-jre-headless; } >&2
fi
exec python3 "$(dirname "$0")/kafka_broker.py" "$@"
