#!/usr/bin/env bash
# The whole test suite, set-up included: bash scripts/test.sh [pytest args]
# pytest runs on every core (pytest-xdist, -n auto); a later -n in the arguments wins
# (-n 0: one process). Tiers and markers: docs/testing.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
setup_torch
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest -n auto --dist loadgroup --durations=15 "$@"
