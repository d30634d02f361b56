#!/usr/bin/env bash
# The test command (README, .ci/run): set up the project's environment, build the real servers'
# environments (cached outside the clone), then run every test. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$python" -m venv .venv
# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
# ray: tests/load/test_ray.py runs load workers as Ray actors on a local head (~285 MB, installed once).
.venv/bin/pip install --quiet --disable-pip-version-check torch==2.13.0 -e '.[test,ray]'
# Headless Chromium for the report's browser test (tests/report/test_browser.py): Debian's package, installed
# once; an installed one costs only the `command -v` check.
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null
fi
for env_script in scripts/envs/*.sh; do
  [ -e "$env_script" ] || continue
  echo "== $env_script"
  bash "$env_script"
done
# Lint, format and types ([tool.ruff] and [tool.mypy] in pyproject.toml): any finding fails the run (set -e).
.venv/bin/ruff check bench tests benchmarks scripts
.venv/bin/ruff format --check bench tests benchmarks scripts
.venv/bin/mypy bench
# Nothing left that nothing calls ([tool.vulture]: bench/, with the framework-called names whitelisted).
.venv/bin/vulture
# The layers point down and nothing imports in a cycle ([tool.importlinter] in pyproject.toml).
.venv/bin/lint-imports
# The docs site (mkdocs.yml): a broken link or anchor, or a page left out of the nav, fails the build; it is built
# into a folder outside the clone. Material's own web fonts are off (theme.font), so nothing is fetched.
site_dir=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site_dir"
rm -rf "$site_dir"
# The CI jobs users copy (examples/ci/; docs/ci-example.md): the GitHub workflow checked by actionlint.
.venv/bin/actionlint examples/ci/github-actions.yml
# The GitLab job, against GitLab's CI schema as check-jsonschema ships it (vendored: nothing fetched).
.venv/bin/check-jsonschema --builtin-schema vendor.gitlab-ci examples/ci/gitlab-ci.yml
# ranx's metrics are numba functions compiled on first use (about 30 s on 2 cores, minutes on a busy machine): their
# cache goes outside the clone, like the servers' environments, so a run after the first loads them compiled.
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$HOME/.cache/ragbench/numba}
# Two workers (pytest-xdist): half the suite waits on servers, sockets and subprocesses, so a second worker keeps
# both cores busy; tests that share a costly session fixture (the real servers, every command's outputs) stay on
# one worker together, every other test with its module (tests/conftest.py); the groups go out in the order
# tests/conftest.py gives them, longest first, not ordered by their number of tests.
exec .venv/bin/python -m pytest -n 2 --dist loadgroup --no-loadscope-reorder "$@"
