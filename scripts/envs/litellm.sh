#!/usr/bin/env bash
# Builds the LiteLLM proxy 1.106.12 environment outside the clone, once per machine.
# Idempotent: a `.complete` marker, written last, makes reruns a no-op.
# uv installs the proxy's large dependency set in seconds (pip takes minutes); litellm needs no torch.
set -euo pipefail

ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
ENV_DIR="$ENV_ROOT/litellm-1.106.12"
PYTHON="${PYTHON:-python3}"

if [[ -f "$ENV_DIR/.complete" ]]; then
    echo "litellm 1.106.12: ready at $ENV_DIR"
    exit 0
fi

echo "litellm 1.106.12: building $ENV_DIR"
rm -rf "$ENV_DIR"
mkdir -p "$ENV_ROOT"
"$PYTHON" -m venv "$ENV_DIR"
"$ENV_DIR/bin/python" -m pip install --quiet uv
"$ENV_DIR/bin/python" -m uv pip install --quiet --python "$ENV_DIR/bin/python" "litellm[proxy]==1.106.12"
"$ENV_DIR/bin/litellm" --help >/dev/null
touch "$ENV_DIR/.complete"
echo "litellm 1.106.12: ready at $ENV_DIR"
