"""`ragbench quality` through a real Open WebUI 0.12.4 whose vectors live in Milvus Lite 3.2.2 (issue 47; env from
scripts/envs/milvus.sh, pymilvus 2.6.14 as Open WebUI pins it): Milvus Lite runs inside the app's process, so the
harness starts only Open WebUI, with VECTOR_DB=milvus, MILVUS_URI unset (pymilvus refuses a file path in that
variable at import) and the default `DATA_DIR/vector_db/milvus.db` folder made first (pymilvus will not make it).
One cheap test: the same claim as on Chroma and pgvector (every query ranked, nDCG@10 within 0.05 of the local
dense engine, settings restored), the store named, the vectors in Milvus Lite's folder and not in a Chroma one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from remote_helpers import judged, ndcg10, scifact_sample

from bench.results.schema.run import record_store
from bench.results.store import read_results
from bench.targets.base import no_progress
from bench.targets.registry import TargetOptions, build_target, parse_target_spec
from tests.harness import milvus as milvus_harness
from tests.harness import openwebui as openwebui_harness
from tests.harness.beir import write_dataset
from tests.harness.cli import run_cli_process
from tests.harness.openwebui import OpenWebUIServer, start_openwebui
from tests.harness.process import stop_process

pytestmark = pytest.mark.integration

STORE = "milvus-lite-hnsw"
SLICE_DOCS = 50  # the slice's 40 queries, their 41 judged documents and a few distractors: wiring, not size
DEPTH = 10


@pytest.fixture(scope="module")
def openwebui_milvus_server(infinity_server, server_logs: Path, tmp_path_factory) -> Iterator[OpenWebUIServer]:
    for folder, script in ((openwebui_harness.env_dir(), "openwebui.sh"), (milvus_harness.env_dir(), "milvus.sh")):
        if not (folder / ".complete").exists():
            pytest.fail(f"environment missing at {folder}: run `bash scripts/envs/{script}` first", pytrace=False)
    work = tmp_path_factory.mktemp("openwebui-milvus")
    milvus_harness.prepare_data_dir(work)
    proc, server = start_openwebui(
        work,
        server_logs / "openwebui-milvus.log",
        infinity_server.url,
        infinity_server.embed_model,
        milvus_harness.milvus_store(),
    )
    try:
        yield server
    finally:
        stop_process(proc)


def test_quality_through_openwebui_on_milvus_lite(tmp_path, openwebui_milvus_server, figures):
    dataset = scifact_sample(SLICE_DOCS)
    data = write_dataset(tmp_path / "data", dataset)
    spec = f"openwebui:vector@{openwebui_milvus_server.url}?kb=ragbench-test-milvus&store={STORE}"
    argv = ["quality", "--dataset", str(data), "--split", "test", "--out", str(tmp_path / "out"), "--depth", "10"]
    done = run_cli_process(
        [*argv, "-m", "nDCG@10", "-t", spec], env={"OPENWEBUI_API_KEY": openwebui_milvus_server.api_key}, timeout=600
    )
    assert done.returncode == 0, done.stderr

    results = read_results(tmp_path / "out" / "results.jsonl")
    (target,) = results.targets
    assert (target.status, target.errors, target.queries) == ("ok", 0, len(judged(dataset)))
    assert record_store(target) == STORE
    remote = next(m.mean for m in results.metrics if m.target == target.name)
    dense = build_target(parse_target_spec("dense"), TargetOptions())
    dense.prepare(dataset, no_progress)
    local = ndcg10(dataset, dense.search(judged(dataset), DEPTH, no_progress))
    figures.add(
        "nDCG@10, Open WebUI on Milvus Lite (HNSW)",
        f"{remote:.4f} vs local dense {local:.4f} ({len(dataset.corpus)} docs), p50 {target.latency_ms['p50']:.0f} ms",
    )
    assert remote == pytest.approx(local, abs=0.05)
    # The vectors are Milvus Lite's, in its folder under DATA_DIR; no Chroma database was made.
    folder = milvus_harness.prepare_data_dir(Path(openwebui_milvus_server.data_dir).parent)
    assert sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) > 0
    assert not list(Path(openwebui_milvus_server.data_dir).glob("vector_db/chroma.sqlite3"))
