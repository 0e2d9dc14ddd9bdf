#!/bin/sh
# Regression mode for every fuzz target: runs each input of its corpus (fuzz/corpus/<target>/)
# and the kept crash regressions (tests/formats/data/fuzz-regressions/<name>-*) once, then
# fuzzes for RUNS inputs from a fixed seed (-seed=1: the same inputs on every run of the same
# build). New inputs go to a scratch folder, never into the corpus. Exits 1 on the first finding.
# Usage: fuzz/regress.sh [BUILD_DIR] [RUNS]
set -eu
build=${1:-build-fuzz}
runs=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
regressions="$here/../tests/formats/data/fuzz-regressions"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hetplan-fuzz-XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM
mkdir -p "$build/fuzz-logs"
total_start=$(date +%s)
# The targets: fuzz/targets, the list run.sh fuzzes too.
for target in $(cat "$here/targets"); do
  binary="$build/fuzz/$target"
  log="$build/fuzz-logs/$target-regress.log"
  start=$(date +%s)
  # Every kept input once (libFuzzer runs the files it is given and stops).
  set -- "$here/corpus/$target"/*
  for kept in "$regressions/${target#fuzz_}-"*; do
    [ -e "$kept" ] && set -- "$@" "$kept"
  done
  if ! "$binary" -timeout=10 -rss_limit_mb=2048 "$@" >"$log" 2>&1; then
    echo "$target: FAILED on a kept input (log: $log)"
    tail -n 30 "$log"
    exit 1
  fi
  kept_count=$#
  # A short fuzzing run from the corpus. The extender's target goes through a real server and
  # waits on sockets: at most 3,000 inputs.
  target_runs=$runs
  if [ "$target" = fuzz_extender_request ] && [ "$runs" -gt 3000 ]; then target_runs=3000; fi
  mkdir -p "$scratch/$target"
  if ! "$binary" -seed=1 -runs="$target_runs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/fuzz-logs/$target-" \
      "$scratch/$target" "$here/corpus/$target" >>"$log" 2>&1; then
    echo "$target: FAILED while fuzzing (log: $log; the input is in $build/fuzz-logs/)"
    tail -n 30 "$log"
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "$target: $kept_count kept inputs ok, $execs fuzzed inputs in $(( $(date +%s) - start )) s, no finding"
done
echo "fuzz regression: $(( $(date +%s) - total_start )) s"
