#!/usr/bin/env bash
# The README's test command N times in a row while a CPU-bound load runs beside it, as a
# clean-clone CI on a busy 2-core machine meets it (issue 38, item 9):
#   bash scripts/loaded_suite.sh [N] [pytest args]        (N: 3 by default)
# The load is Debian's stress-ng, one CPU worker per core (`apt-get install stress-ng`).
# Each run's pytest closing line and exit code are printed, and kept in the logs under
# ${MEMPLAN_LOADED_LOGS:-/tmp/memplan-loaded}; the exit code is that of the worst run.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${1:-3}"
shift || true
command -v stress-ng >/dev/null || { echo "stress-ng is missing: apt-get install stress-ng" >&2; exit 2; }
logs="${MEMPLAN_LOADED_LOGS:-/tmp/memplan-loaded}"
mkdir -p "$logs"
stress-ng --cpu "$(nproc)" --quiet &
load=$!
trap 'kill "$load" 2>/dev/null' EXIT
worst=0
for run in $(seq 1 "$runs"); do
  started=$(date +%s)
  bash scripts/test.sh -q "$@" >"$logs/run$run.log" 2>&1
  code=$?
  closing=$(grep -E '^(=+ )?[0-9]+ (passed|failed)' "$logs/run$run.log" | tail -1)
  echo "run $run: exit $code after $(( $(date +%s) - started )) s, load $(cut -d' ' -f1-3 /proc/loadavg): $closing"
  [ "$code" -gt "$worst" ] && worst=$code
done
exit "$worst"
