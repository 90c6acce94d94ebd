#!/usr/bin/env bash
# Beam's Flink job server on 127.0.0.1 (embedded mini-cluster, or a local standalone Flink cluster) for Flink runs.
#   scripts/flink.sh start [--cluster [--taskmanagers N] [--slots S]]  # fetch jars with mvn on first use (cached),
#                       # start (each TaskManager with a Beam Python worker pool), print localhost:PORT
#   scripts/flink.sh flags                          # the runner flags of audit and monitor on the cluster's pools
#   scripts/flink.sh status [--json]                # print the job endpoint if it answers (exit 0), else exit 1
#   scripts/flink.sh stop                           # stop every process it started, by PID
# Environment: GROUNDWATCH_FLINK_HOME (state and logs), GROUNDWATCH_FLINK_JOB_PORT (default 38099),
# GROUNDWATCH_FLINK_REST_PORT (JobManager REST, default 38081), GROUNDWATCH_FLINK_POOL_PORT (worker pools, 38096),
# GROUNDWATCH_FLINK_TASKMANAGERS (1), GROUNDWATCH_FLINK_SLOTS (2 for one TaskManager, else 1 each),
# GROUNDWATCH_FLINK_JAVA (a Java 11 or 17 binary; else JAVA_HOME, java on PATH, /usr/lib/jvm).
# The worker pools run with the python3 found first on PATH (activate the project's virtual environment first) and
# get this command's environment: export the S3, Kafka and judge secrets before `start`.
set -euo pipefail
if [[ "${1:-}" == start ]] && { ! command -v mvn >/dev/null || ! command -v java >/dev/null; } && [[ $EUID -eq 0 ]]; then
  # A fresh Debian machine: Flink 1.19 runs on Java 11 or 17, and mvn fetches it. The JDK, not the JRE: `start`
  # compiles the class that keeps each job from staging the job server's jars (13 s of a job's start here).
  { apt-get update -qq && apt-get install -y -qq maven openjdk-17-jdk-headless; } >&2
fi
exec python3 "$(dirname "$0")/flink_cluster.py" "$@"
