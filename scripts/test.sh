#!/usr/bin/env bash
# Sets up .venv (scripts/setup.sh), then runs the linters, the documentation build and the whole test suite.
# The suite runs from a copy of the checkout in an empty temporary folder: users clone the repository
# alone, so a test that reads anything beside the checkout (such as a sibling ../shared) fails here.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
./scripts/setup.sh
.venv/bin/ruff check .
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The documentation site, offline: a broken link or anchor, a page missing from the nav (or a nav entry
# without its page) fails here. Built outside the checkout.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$scratch/site"  # (--quiet would hide the warnings --strict counts)
alone="$scratch/t3rl"
mkdir "$alone"
# Tracked and new (not ignored) files that exist in the work tree, as they are now.
git ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' file; do [[ -e $file ]] && printf '%s\0' "$file"; done \
  | tar --null -T - -cf - | tar -xf - -C "$alone"
# The git state (manifests record it) comes along.
cp -a .git "$alone/.git"
# The editable install maps the package `t3rl_conf` to this checkout's conf/; the copy's own comes first.
ln -s conf "$alone/t3rl_conf"
cd "$alone"
# The copy's bytecode, compiled once here: with PYTHONDONTWRITEBYTECODE set (as on the developers'
# machines and CI) every Python process of the suite (the workers, each `t3rl` command, stage, server and
# driver) otherwise compiled t3rl's modules from source again. Python's caches are not counted below. A
# file that does not compile (a fixture, say) is left to the test that reads it.
"$root/.venv/bin/python" -m compileall -q -j 0 -x '/\.git/' . >/dev/null || true
# One worker more than cores, up to 4 (pytest-xdist; each worker imports the whole stack, ~1.2 GB
# resident): a quarter of the suite's wall is waiting on servers, Ray and child processes, and a third
# worker on 2 cores keeps them busy through it (2 workers: pytest 9 min 56 s, 3: 8 min 34 s, the same
# clone on an idle machine). Whole modules per worker so a module's shared fixture is built once
# (tests/conftest.py). T3RL_TEST_WORKERS=0 runs in this one process. Arguments after the script go to
# pytest (`-n 0`, `-x`, a path).
workers=${T3RL_TEST_WORKERS:-$(( $(nproc) < 4 ? $(nproc) + 1 : 4 ))}
# What the tests leave in the checkout (ignored files too: runs/, outputs/ …) must be what was there:
# tests write under their temporary directories. Python's and pytest's own caches are not counted.
files() { git status --porcelain --ignored --untracked-files=all | grep -v -e '__pycache__/' -e '^!! .pytest_cache/' || true; }
before=$(files)
# The tests' temporary files (pytest's tmp_path, the composition and data caches, every t3rl command's and
# stage's own) go to a fresh folder on a RAM file system when TMPDIR is not set and /dev/shm is one with
# room: each run record t3rl writes is fsynced (file and folder, ~7 ms a call on this machine's disk),
# and the tests write thousands (a run stopped at each step of its pipeline, then resumed: 41 s -> 17 s).
# The product still calls fsync; a RAM file system answers it at once. TMPDIR=/tmp keeps them on disk.
if [[ -z ${TMPDIR:-} && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]] \
  && (( $(df -k --output=avail /dev/shm | tail -n 1) > 4 * 1024 * 1024 )); then
  # Short: a socket's path (a few tests bind one below tmp_path) holds at most 107 bytes.
  TMPDIR=$(mktemp -d /dev/shm/t3rlXXXXXX)
  export TMPDIR
  trap 'rm -rf "$scratch" "$TMPDIR"' EXIT
fi
status=0
PYTHONPATH="$alone${PYTHONPATH:+:$PYTHONPATH}" "$root/.venv/bin/python" -m pytest -q -n "$workers" --dist loadfile "$@" || status=$?
if ! written=$(diff <(printf '%s\n' "$before") <(files)); then
  printf 'the tests wrote into the checkout (%s):\n%s\n' "$alone" "$written" >&2
  status=1
fi
exit "$status"
