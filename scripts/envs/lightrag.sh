#!/usr/bin/env bash
# Builds the LightRAG 1.5.7 server environment outside the clone so CI runs can reuse it, plus the
# offline tiktoken cache LightRAG needs to start (see tests/harness/tiktoken_cache.py).
# Idempotent: a `.complete` marker, written last, means the env is ready and the script does nothing.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
ENV_DIR="$ENV_ROOT/lightrag-hku-1.5.7"
UV_DIR="$ENV_ROOT/uv-0.13.9"
PYTHON="${RAGBENCH_ENV_PYTHON:-python3.11}"

if [[ -f "$ENV_DIR/.complete" ]]; then
  echo "lightrag env: ready at $ENV_DIR"
  exit 0
fi

echo "lightrag env: building at $ENV_DIR"
mkdir -p "$ENV_ROOT"
# uv installs this package set in seconds where pip takes minutes; LightRAG needs no torch.
if [[ ! -x "$UV_DIR/bin/uv" ]]; then
  rm -rf "$UV_DIR"
  "$PYTHON" -m venv "$UV_DIR"
  "$UV_DIR/bin/pip" install --quiet "uv==0.13.9"
fi
rm -rf "$ENV_DIR"
"$UV_DIR/bin/uv" venv --quiet --python "$PYTHON" "$ENV_DIR"
"$UV_DIR/bin/uv" pip install --quiet --python "$ENV_DIR/bin/python" "lightrag-hku[api]==1.5.7"

# tiktoken's BPE ranks from npm (the only reachable copy offline), checked against tiktoken's sha256.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack --silent "js-tiktoken@1.0.21" >/dev/null && tar xzf js-tiktoken-1.0.21.tgz)
"$ENV_DIR/bin/python" "$REPO/tests/harness/tiktoken_cache.py" "$WORK/package" "$ENV_DIR/tiktoken-cache"
TIKTOKEN_CACHE_DIR="$ENV_DIR/tiktoken-cache" "$ENV_DIR/bin/python" -c \
  "import tiktoken; assert tiktoken.get_encoding('o200k_base').encode('hello world')"

"$ENV_DIR/bin/lightrag-server" --help >/dev/null
touch "$ENV_DIR/.complete"
echo "lightrag env: ready at $ENV_DIR"
