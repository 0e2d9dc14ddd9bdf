#!/bin/sh
# Runs every fuzzer for SECONDS each, then merges what it found back into fuzz/corpus/<target>/.
# Usage: [TARGETS="fuzz_x ..."] fuzz/run.sh [BUILD_DIR] [SECONDS]
# (crashes land in BUILD_DIR/fuzz-artifacts/)
set -eu
build=${1:-build-fuzz}
seconds=${2:-240}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/fuzz-artifacts" "$build/fuzz-logs"
# The targets: fuzz/targets, the list regress.sh runs too.
for target in ${TARGETS:-$(cat "$here/targets")}; do
  work="$build/fuzz-work/$target"
  rm -rf "$work" && mkdir -p "$work"
  "$build/fuzz/$target" -max_len=4096 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" \
    "$work" "$here/corpus/$target" >"$build/fuzz-logs/$target.log" 2>&1 || true
  # Minimize: keep only inputs that add edge coverage (-use_counters=0 keeps the corpus small:
  # hit counts would keep hundreds of inputs that differ only in how often a loop ran).
  merged="$build/fuzz-work/$target-merged"
  rm -rf "$merged" && mkdir -p "$merged"
  "$build/fuzz/$target" -merge=1 -use_counters=0 -max_len=4096 -timeout=10 "$merged" "$here/corpus/$target" "$work" \
    >"$build/fuzz-logs/$target-merge.log" 2>&1 || true
  rm -f "$here/corpus/$target"/*
  cp "$merged"/* "$here/corpus/$target/"
  echo "$target: $(ls "$here/corpus/$target" | wc -l) corpus files after merge"
done
