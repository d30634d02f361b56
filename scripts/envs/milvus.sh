#!/usr/bin/env bash
# Builds Milvus Lite for Open WebUI 0.12.4's `milvus` store (issue 47): pymilvus (pinned as Open WebUI's `all` extra
# pins it) and milvus-lite 3.2.2 (pure Python over faiss: it serves Milvus's gRPC API from a thread inside the
# process that opens a local `.db` path, here Open WebUI itself) with the two packages they need that Open WebUI's
# environment lacks, installed without dependencies into a folder of their own that the harness puts on Open
# WebUI's PYTHONPATH: the Open WebUI environment itself is left as built (its grpcio, protobuf, pandas, pyarrow,
# numpy and orjson serve).
# Idempotent: a `.complete` marker, written last, means the env is ready and the script does nothing.
set -euo pipefail

ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
ENV_DIR="$ENV_ROOT/milvus-lite-3.2.2"
PYTHON="${RAGBENCH_ENV_PYTHON:-python3.11}"

if [[ -f "$ENV_DIR/.complete" ]]; then
  echo "milvus env: ready at $ENV_DIR"
  exit 0
fi

echo "milvus env: building at $ENV_DIR (under a minute)"
rm -rf "$ENV_DIR"
mkdir -p "$ENV_DIR"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --target "$ENV_DIR/openwebui-extra" \
  "pymilvus==2.6.14" "milvus-lite==3.2.2" "faiss-cpu==1.15.1" "cachetools==8.0.3"
# faiss's wheel is a platform one: it must load here. (milvus_lite itself imports pyarrow, Open WebUI's: checked by
# tests/harness/test_milvus.py with Open WebUI's interpreter; scripts/envs/openwebui.sh may run after this.)
PYTHONPATH="$ENV_DIR/openwebui-extra" "$PYTHON" -c 'import faiss; print("faiss", faiss.__version__)'
touch "$ENV_DIR/.complete"
echo "milvus env: ready at $ENV_DIR"
