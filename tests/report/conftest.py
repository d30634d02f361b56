"""Real outputs of every command that writes results, made once per session by the commands themselves:
two quality runs (for comparisons across runs), identity (a failing pair with causes, a passing rerank
pair), doctor (findings ok and bad) and load (a short closed-loop sweep against the scripted TEI-shaped
server of tests/load) and ceiling (the reference model in-process, briefly). The schema, browser and
notebook tests all read these."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.datasets import load_dataset
from bench.datasets.sample import sample_dataset
from tests.harness.beir import write_dataset
from tests.harness.cli import exit_code
from tests.harness.process import free_port, start_process, stop_process, wait_healthy
from tests.harness.tei_fixture import start_fixture
from tests.paths import REPO, scifact

LOAD_SERVER = REPO / "tests" / "load" / "fixture_server.py"


@dataclass(frozen=True)
class CommandOutputs:
    quality: Path  # bm25 + dense, seed 0
    quality_b: Path  # bm25 + hybrid, seed 1: a second run to compare with
    identity: Path
    doctor: Path
    load: Path
    ceiling: Path
    root: Path  # every output folder above is below this one

    def folders(self) -> dict[str, Path]:
        return {
            "quality": self.quality,
            "quality_b": self.quality_b,
            "identity": self.identity,
            "doctor": self.doctor,
            "load": self.load,
            "ceiling": self.ceiling,
        }


def _small_beir(root: Path) -> Path:
    return write_dataset(root, sample_dataset(load_dataset(scifact(), "train"), max_queries=30, max_docs=200, seed=3))


def _texts(path: Path) -> Path:
    """18 SciFact texts: short ones, ones with line breaks (the fault below strips them), long ones."""
    docs = list(load_dataset(scifact(), "train").corpus.values())[:18]
    texts = [d.text.split(". ")[0] if i % 3 == 0 else f"{d.title}\n{d.text[:600]}" for i, d in enumerate(docs)]
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return path


@pytest.fixture(scope="session")
def command_outputs(tmp_path_factory, minilm_backend) -> CommandOutputs:
    root = tmp_path_factory.mktemp("command-outputs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGBENCH_CACHE", str(root / "embedding-cache"))
        data = _small_beir(root / "data")
        outputs = CommandOutputs(
            *(root / name for name in ("quality", "quality_b", "identity", "doctor", "load", "ceiling")), root=root
        )
        assert (
            exit_code(
                patch, "quality", "--dataset", str(data), "-t", "bm25", "-t", "dense", "--out", str(outputs.quality)
            )
            == 0
        )
        assert (
            exit_code(
                patch,
                "quality",
                "--dataset",
                str(data),
                "-t",
                "bm25",
                "-t",
                "hybrid",
                "--seed",
                "1",
                "--out",
                str(outputs.quality_b),
            )
            == 0
        )
        server = start_fixture(
            minilm_backend, faults=("strip_newlines",), max_input_length=256, max_client_batch_size=16
        )
        reranker = start_fixture(minilm_backend, model_kind="reranker")
        try:
            code = exit_code(
                patch,
                "identity",
                "-e",
                "ref=reference",
                "-e",
                f"srv=tei@{server.url}",
                "-e",
                f"rr=tei-rerank@{reranker.url}",
                "-e",
                f"co=cohere@{reranker.url}/v2",
                "--texts",
                str(_texts(root / "texts.jsonl")),
                "--out",
                str(outputs.identity),
            )
            assert code == 1  # srv strips line breaks: that pair fails, by design
            code = exit_code(
                patch, "doctor", "--tei", server.url, "--openwebui", "http://127.0.0.1:9", "--out", str(outputs.doctor)
            )
            assert code == 1  # Open WebUI is not there and has no key: findings both ok and bad
        finally:
            server.stop()
            reranker.stop()
        port = free_port()
        load_server = start_process(
            "load-fixture",
            [sys.executable, str(LOAD_SERVER), "--port", str(port), "--service-ms", "2"],
            root / "load-fixture.log",
        )
        try:
            wait_healthy(load_server, f"http://127.0.0.1:{port}/metrics", deadline_s=30)
            assert (
                exit_code(
                    patch,
                    "load",
                    "-e",
                    f"t=tei@http://127.0.0.1:{port}",
                    "--concurrency",
                    "1,2",
                    "--duration",
                    "1s",
                    "--warmup",
                    "0s",
                    "--texts",
                    str(root / "texts.jsonl"),
                    "--out",
                    str(outputs.load),
                )
                == 0
            )
        finally:
            stop_process(load_server)
        assert (
            exit_code(
                patch, "ceiling", "--batch", "4,8", "--lengths", "16", "--seconds", "0.3", "--out", str(outputs.ceiling)
            )
            == 0
        )
    return outputs


def ragbench_exit(*args: str) -> int:
    """`ragbench ARGS` run in this process; the exit code a process would have (for module-level callers)."""
    with pytest.MonkeyPatch.context() as patch:
        return exit_code(patch, *args)
