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
# The suite starts hundreds of Python processes (CLI runs, profiled children, pages). With
# bytecode caching off (PYTHONDONTWRITEBYTECODE, set on some machines) each compiles
# memplan's modules again and every pytest worker rewrites every test module: ~12% more
# CPU on the CLI tests (docs/testing.md). Compiled once here, in parallel.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q -j 0 app.py application benchmarks core dashboard memplan \
  modeling presentation profiling scripts tests >/dev/null
exec .venv/bin/python -m pytest -n auto --dist loadgroup --durations=15 "$@"
