#!/usr/bin/env bash
# memplan on the bundled reference data, set-up included: bash scripts/start.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
exec .venv/bin/python -m profiling list "$@"
