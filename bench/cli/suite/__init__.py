"""Suite files: one TOML file names datasets, targets, endpoints, load sweeps and the gate's thresholds,
so a CI job is one command (`ragbench run SUITE.toml [--baseline DIR] [--out DIR]`).

    [gate]                      # compare's flags
    alpha = 0.05
    max_drop = { "nDCG@10" = 0.01, "R@100" = "2%" }
    primary = ["nDCG@10"]       # the gated quality checks (Holm's family); default: those with a max_drop
    max_p99_increase = "10%"
    min_throughput_ratio = 0.95

    [datasets.docs]             # NAME -> a dataset and how to sample it
    path = "builtin:numpy-docs" # or a path, relative to the suite file; split = "..." picks the qrels

    [targets]                   # NAME = target spec (`quality --target NAME=SPEC`)
    bm25 = "bm25"
    prod = "openwebui:hybrid@${OPENWEBUI_URL}"

    [[quality]]                 # one quality run per entry
    dataset = "docs"
    targets = ["bm25", "prod"]  # default: every target
    endpoints = ["tei"]         # what targets name with ?embedder= / ?reranker= (default: every endpoint)

    [endpoints]                 # NAME = endpoint spec (`identity/load -e NAME=SPEC`)
    ref = "reference"

    [[identity]]
    endpoints = ["ref", "tei"]
    dataset = "docs"            # or texts = "FILE"

    [[load]]                    # `ragbench load`'s flags; lists become 1,8,32
    endpoints = ["tei"]
    batch = [1, 8]

`${VAR}` in a string is replaced by the environment variable VAR (an unset one is an error). Secrets come
only from the environment: a secret-looking key, URL credentials or a secret-named spec parameter in the
file is an error (keys are read by the targets and endpoints themselves: OPENWEBUI_API_KEY, key_env=VAR).
The whole file is checked before any job runs, each value by its command's own checks (the option of the
same name on `ragbench quality/identity/load`, then the command's check of the whole request; paths must
exist, datasets must be readable as one of the formats, with their split). Every problem is one line
`SUITE.toml:LINE: what is wrong`. `ragbench run --overwrite` is passed to every job.
"""

from __future__ import annotations

from bench.cli.suite.gate import GATE_KEYS
from bench.cli.suite.keys import DATASET_KEYS, IDENTITY_KEYS, LOAD_KEYS, QUALITY_KEYS, SECTIONS
from bench.cli.suite.reader import load_suite

__all__ = ["DATASET_KEYS", "GATE_KEYS", "IDENTITY_KEYS", "LOAD_KEYS", "QUALITY_KEYS", "SECTIONS", "load_suite"]
