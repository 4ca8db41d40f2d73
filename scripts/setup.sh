#!/usr/bin/env bash
# Sets up .venv with t3rl and its exact pinned CPU stack (requirements/lock.txt, every package with
# --no-deps so nothing drags in CUDA builds). Re-running is cheap: it reinstalls only when the lock
# or the package metadata changed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
# The oldest Python pyproject.toml's requires-python takes (one truth): refused here, before minutes of
# installing end in pip's "requires a different Python".
need=$(sed -n 's/^requires-python = ">=\([0-9]*\.[0-9]*\)".*/\1/p' pyproject.toml)
version_of() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
old_enough() { [[ "$(printf '%s\n' "$need" "$1" | sort -V | head -1)" == "$need" ]]; }
found=$(version_of "$python") || {
  echo "setup: '$python' does not run here; t3rl needs Python $need or newer: PYTHON=/path/to/python$need ./scripts/setup.sh" >&2
  exit 1
}
if ! old_enough "$found"; then
  echo "setup: $python is Python $found; t3rl needs $need or newer: PYTHON=python$need ./scripts/setup.sh" >&2
  exit 1
fi
if [[ -x .venv/bin/python ]] && ! old_enough "$(version_of .venv/bin/python)"; then
  echo "setup: .venv holds Python $(version_of .venv/bin/python); t3rl needs $need or newer: rm -rf .venv, then PYTHON=python$need ./scripts/setup.sh" >&2
  exit 1
fi
[[ -x .venv/bin/python ]] || "$python" -m venv .venv
stamp=$(cat requirements/lock.txt pyproject.toml setup.py | sha256sum | cut -d' ' -f1)
if [[ "$(cat .venv/.t3rl-installed 2>/dev/null)" != "$stamp" ]]; then
  echo "Installing the pinned stack into .venv (first time: a few minutes)…"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r requirements/lock.txt
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$stamp" > .venv/.t3rl-installed
fi
echo "t3rl is installed in .venv (activate with: source .venv/bin/activate)"
