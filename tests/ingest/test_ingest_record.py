"""`ragbench ingest --record FILE`: the ingest's own meter writes the same trace `ragbench meter --record` writes
(shapes and times, never texts), and a --record it cannot honour is one line before anything."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from bench.endpoints.meter_trace import CallKind, read_trace
from bench.ingest.run import IngestPlan, start_meter
from tests.endpoints.test_meter import echo, upstream
from tests.harness.beir import write_beir
from tests.harness.process import free_port
from tests.harness.stubs import Whole


def plan(upstreams: dict[str, str], record: Path) -> IngestPlan:
    return IngestPlan([], [], upstreams, "127.0.0.1", 0, False, False, 10.0, None, record=record)


def test_the_ingest_meter_records_each_call_shape_never_its_texts(tmp_path: Path):
    trace = tmp_path / "ingest-trace.jsonl"
    secret = "a confidential chunk of a document"
    with upstream(Whole(echo)) as url:
        meter = start_meter(plan({"embedding": url}, trace))
        assert meter is not None
        try:
            httpx.post(f"{meter.url}/embedding/embeddings", json={"input": [secret, "abc"]}, timeout=10)
            httpx.post(f"{meter.url}/embedding/embeddings", json={"input": ["x" * 9]}, timeout=10)
        finally:
            meter.close()
    assert secret not in trace.read_text()
    calls = read_trace(trace)
    assert [(c.route, c.kind, c.lengths) for c in calls] == [
        ("embedding", CallKind.EMBED, (len(secret), 3)),
        ("embedding", CallKind.EMBED, (9,)),
    ]
    assert len(meter.calls) == 2  # the ingest's own figures still see every call


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--record {trace}: the trace is the meter's: add --meter-upstream"),
        (["--meter-upstream", "http://127.0.0.1:9"], "--record {trace}: expected a file in an existing folder"),
    ],
    ids=["no-meter", "no-folder"],
)
def test_a_record_without_a_meter_or_a_folder_is_one_line_before_anything(ragbench, tmp_path, extra, message):
    data = write_beir(tmp_path / "data", {"d0": "one text"}, {"q1": "topic"}, [("q1", "d0", 1)])
    trace = tmp_path / ("absent/trace.jsonl" if extra else "trace.jsonl")
    args = ["-t", "openwebui@http://127.0.0.1:9", "--record", trace, "--meter-port", str(free_port())]
    code, _, err = ragbench("ingest", "--dataset", data, *args, *extra, "--out", tmp_path / "o")
    assert code == 2 and message.format(trace=trace) in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "o").exists() and not trace.exists()
