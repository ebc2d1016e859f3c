#!/usr/bin/env bash
# The whole test suite, set-up included: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest "$@"
