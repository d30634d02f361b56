"""Small helpers shared by the remote-target tests (pytest puts this folder on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx

from bench.datasets import load_dataset
from bench.datasets.model import Dataset, Document
from bench.datasets.sample import sample_dataset
from bench.quality.metrics import evaluate, parse_measure
from bench.quality.runs import run_from_results
from bench.targets.base import ProgressFactory, QueryResult, no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness.process import ManagedProcess, free_port, start_process, wait_healthy
from tests.paths import REPO, scifact

NDCG10 = parse_measure("nDCG@10")
SLICE_QUERIES = 40
SLICE_SEED = 3


def scifact_sample(max_docs: int) -> Dataset:
    """SLICE_QUERIES SciFact train queries with every judged document, plus seeded random distractors up to
    `max_docs`: the same queries and judged documents whatever `max_docs` is."""
    full = load_dataset(scifact(), split="train")
    return sample_dataset(full, max_queries=SLICE_QUERIES, max_docs=max_docs, seed=SLICE_SEED)


def judged(dataset: Dataset) -> dict[str, str]:
    return {qid: dataset.queries[qid] for qid in dataset.judged_queries()}


def ndcg10(dataset: Dataset, results: list[QueryResult]) -> float:
    run, _ = run_from_results(results)
    return evaluate(dataset.qrels, run, [NDCG10], complete=True).means[NDCG10.trec_name]


def run_target(
    spec: str,
    dataset: Dataset,
    depth: int = 10,
    queries: dict[str, str] | None = None,
    progress: ProgressFactory = no_progress,
) -> tuple[list[QueryResult], dict[str, Any]]:
    """prepare → search → close, with close in `finally` as the quality pipeline does."""
    target = build_target(parse_target_spec(spec), TargetOptions())
    try:
        target.prepare(dataset, progress)
        results = target.search(queries if queries is not None else judged(dataset), depth, progress)
    finally:
        target.close()
    return results, target.describe()


def tiny_dataset(
    name: str, texts: dict[str, str], queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> Dataset:
    corpus = {doc_id: Document(doc_id, "", text) for doc_id, text in texts.items()}
    return Dataset(name=name, corpus=corpus, queries=queries, qrels=qrels, source="test", format="beir")


TINY = tiny_dataset(
    "tiny",
    {
        "d1": "Marie Curie studied radioactivity in Paris.",
        "d2": "Mount Vesuvius buried Pompeii in 79 AD.",
        "d3": "The Amazon river flows through Brazil and Peru.",
    },
    {"q1": "Who studied radioactivity?", "q2": "Which volcano buried Pompeii?"},
    {"q1": {"d1": 1}, "q2": {"d2": 1}},
)


def start_meter(upstreams: dict[str, str], log_path: Path) -> tuple[ManagedProcess, str]:
    """`ragbench meter` as a user runs it, forwarding `/<route>/…` to each upstream; its URL once it answers.
    The caller stops the process."""
    port = free_port()
    argv = [sys.executable, "-c", "from bench.cli import main; main()", "meter", "--port", str(port)]
    for route, url in upstreams.items():
        argv += ["--upstream", f"{route}={url}"]
    proc = start_process("ragbench-meter", argv, log_path, cwd=REPO)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/_meter/health", deadline_s=60)
    return proc, url


def lightrag_paths(url: str, key: str) -> set[str]:
    """Every document path a LightRAG server holds (its paginated listing, all pages)."""
    found: set[str] = set()
    page = 1
    while True:
        body = httpx.post(
            f"{url}/documents/paginated",
            headers={"X-API-Key": key},
            json={"page": page, "page_size": 200, "sort_field": "id"},
            timeout=30,
        ).json()
        found |= {d["file_path"] for d in body["documents"]}
        if not body["pagination"]["has_next"]:
            return found
        page += 1
