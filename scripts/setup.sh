#!/usr/bin/env bash
# Creates .venv (Python 3.11), installs requirements.txt and requirements-dev.txt into it
# and the project itself (editable, so the `memplan` command runs this checkout), again
# only when those files or pyproject.toml change. Sourced by scripts/start.sh and
# scripts/test.sh; scripts/test.sh then calls `setup_torch` (the dashboard needs no torch).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python_bin="${MEMPLAN_PYTHON:-$(command -v python3.11 || command -v python3)}"
if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "memplan needs Python 3.11; $python_bin is $("$python_bin" --version 2>&1)." \
       "Set MEMPLAN_PYTHON to a Python 3.11 interpreter." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python_bin" -m venv .venv

stamp=.venv/.requirements.sha256
wanted=$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "installing requirements into .venv (first time: a few minutes)..." >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r requirements.txt -r requirements-dev.txt
  # Dependencies come from the requirements files alone: --no-deps.
  .venv/bin/python -m pip install --quiet --no-deps -e .
  echo "$wanted" > "$stamp"
fi

# PyTorch (requirements-torch.txt), for the tests: again only when that file changes.
setup_torch() {
  local torch_stamp=.venv/.requirements-torch.sha256 torch_wanted
  torch_wanted=$(sha256sum requirements-torch.txt | cut -d' ' -f1)
  if [ "$(cat "$torch_stamp" 2>/dev/null)" != "$torch_wanted" ]; then
    echo "installing PyTorch (CPU) into .venv for the tests (first time: a minute or two)..." >&2
    .venv/bin/python -m pip install --quiet -r requirements-torch.txt
    echo "$torch_wanted" > "$torch_stamp"
  fi
}
