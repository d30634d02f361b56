#!/usr/bin/env bash
# Builds the Open WebUI 0.12.4 server environment outside the clone so CI runs can reuse it.
# Idempotent: a `.complete` marker, written last, means the env is ready and the script does nothing.
set -euo pipefail

ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
ENV_DIR="$ENV_ROOT/open-webui-0.12.4"
PYTHON="${RAGBENCH_ENV_PYTHON:-python3.11}"

if [[ -f "$ENV_DIR/.complete" ]]; then
  echo "openwebui env: ready at $ENV_DIR"
  exit 0
fi

echo "openwebui env: building at $ENV_DIR (about 8 minutes)"
rm -rf "$ENV_DIR"
mkdir -p "$ENV_ROOT"
"$PYTHON" -m venv "$ENV_DIR"
"$ENV_DIR/bin/pip" install --quiet --upgrade pip
# torch pinned in the same command: otherwise a dependency pulls a multi-GB CUDA build.
"$ENV_DIR/bin/pip" install --quiet "torch==2.13.0" "open-webui==0.12.4"
"$ENV_DIR/bin/open-webui" --help >/dev/null
touch "$ENV_DIR/.complete"
echo "openwebui env: ready at $ENV_DIR"
