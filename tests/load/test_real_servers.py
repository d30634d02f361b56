"""Short sweeps against real servers: infinity-emb (embed and rerank) and the TEI-contract fixture
(real MiniLM vectors behind TEI's wire, timing headers and /metrics); each report renders."""

from __future__ import annotations

import pytest

from bench.results.schema import LoadRequests
from bench.results.store import read_results
from tests.harness.cli import run_cli

pytestmark = pytest.mark.integration

# 16-word texts: two busy cores serve a batch of 8 full SciFact abstracts in seconds, longer than a point.
SHORT = ["--duration", "1s", "--warmup", "0.5s", "--timeout", "20s", "--lengths", "16"]


def _run(args, tmp_path, monkeypatch, capsys, timing=SHORT, expected_code=0):
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(["load", *args, *timing, "--out", str(out)], monkeypatch, capsys)
    assert code == expected_code, stderr
    assert "ragbench load" in stdout  # the summary table
    results = read_results(out / "results.jsonl")
    assert results.end.status == "complete"
    html = (out / "report.html").read_text()
    assert "ragbench load report" in html and "data:image/png;base64," in html
    return results, out


def test_closed_and_open_embed_sweep_against_infinity(infinity_server, tmp_path, monkeypatch, capsys):
    spec = f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}"
    closed, _ = _run(["-e", spec, "--batch", "1,8", "--concurrency", "1,2"], tmp_path / "closed", monkeypatch, capsys)
    assert [(p.batch, p.concurrency, p.length) for p in closed.load_points] == [
        (1, 1, 16),
        (1, 2, 16),
        (8, 1, 16),
        (8, 2, 16),
    ]
    for point in closed.load_points:
        assert point.requests.errors == {} and point.requests.ok > 0, (
            point.requests,
            point.error_examples,
            point.client,
        )
        assert point.throughput.texts_per_s == pytest.approx(point.batch * point.throughput.requests_per_s)
        assert point.latency_ms.service.p50 > 0 and point.latency_ms.scheduled is None
        assert point.server_metrics is None  # infinity serves no TEI te_* metrics
    opened, out = _run(["-e", spec, "--rate", "5,10", "--arrival", "poisson"], tmp_path / "open", monkeypatch, capsys)
    for point in opened.load_points:
        assert point.loop == "open" and point.requests.ok > 0
        assert point.latency_ms.scheduled.p50 >= point.latency_ms.service.p50 * 0.99
        assert point.latency_ms.dispatch_delay is not None
    assert (out / "plots" / "load_rate.png").exists()


def test_rerank_sweep_and_burst_against_infinity(infinity_server, tmp_path, monkeypatch, capsys):
    spec = f"inf=cohere@{infinity_server.url}?model={infinity_server.rerank_model}"
    # A count, not a duration: a rerank of 16 documents on busy cores can outlast a 1 s window (seen in CI: a point
    # that measured nothing, exit 3); what this checks is the sweep's shape, not its speed.
    counted = ["--requests", "4", "--warmup", "0s", "--timeout", "20s", "--lengths", "16"]
    results, _ = _run(
        ["-e", spec, "--documents", "4,16", "--concurrency", "1,2"], tmp_path / "rerank", monkeypatch, capsys, counted
    )
    assert [p.documents for p in results.load_points] == [4, 4, 16, 16]
    assert all(p.op == "rerank" and p.requests.ok > 0 and not p.requests.errors for p in results.load_points)
    opened, _ = _run(["-e", spec, "--documents", "4", "--rate", "4"], tmp_path / "rerank-open", monkeypatch, capsys)
    point = opened.load_points[0]
    assert point.loop == "open" and point.requests.ok > 0 and point.latency_ms.scheduled is not None
    embed = f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}"
    burst, _ = _run(
        ["-e", embed, "--burst", "40", "--batch", "16", "--concurrency", "0,1"], tmp_path / "burst", monkeypatch, capsys
    )
    for point in burst.load_points:
        assert point.loop == "burst" and point.requests.sent == 3 and point.requests.ok == 3  # 16 + 16 + 8
        assert point.throughput.texts_per_s * point.duration_s == pytest.approx(
            40, rel=1e-4
        )  # duration_s kept to the µs
        assert point.latency_ms.scheduled.max == pytest.approx(point.duration_s * 1000, rel=0.05)


def test_tei_headers_tokens_and_metrics_from_the_tei_fixture(tei_fixture, tmp_path, monkeypatch, capsys):
    server = tei_fixture(max_client_batch_size=4)
    # A count, not a duration: the in-process MiniLM behind the fixture takes seconds per batch on busy cores.
    timing = ["--requests", "6", "--warmup", "0s", "--lengths", "16"]
    # Batch 8 is refused (422 past max_client_batch_size): a point with no success, so the command exits 3.
    results, out = _run(
        ["-e", f"tei=tei@{server.url}", "--batch", "2,8", "--concurrency", "2"],
        tmp_path,
        monkeypatch,
        capsys,
        timing,
        expected_code=3,
    )
    ok_point, refused = results.load_points
    assert {k: getattr(ok_point.requests, k) for k in ("sent", "ok", "errors", "unsent")} == {
        "sent": 6,
        "ok": 6,
        "errors": {},
        "unsent": 0,
    }
    assert ok_point.requests.validated >= 5  # bodies parsed with TEI's wire, as the API client does
    assert ok_point.throughput.tokens_source == "x-compute-tokens" and ok_point.throughput.tokens_per_s > 0
    assert ok_point.server_ms.inference.count == ok_point.requests.ok
    counters = ok_point.server_metrics["counters"]
    assert counters['te_request_success{method="batch"}'] >= ok_point.requests.ok
    assert refused.requests.ok == 0 and refused.requests.errors == {"too_large": 6} and refused.status == "failed"
    assert refused.throughput.tokens_source is None
    assert (
        refused.server_metrics["counters"]['te_request_failure{err="validation"}']
        >= refused.requests.errors["too_large"]
    )
    report = (out / "report.md").read_text()
    assert "Server view" in report and "TEI's split" in report


def test_in_process_reference_is_timed_on_a_thread(tmp_path, monkeypatch, capsys):
    timing = ["--requests", "3", "--warmup", "0s", "--lengths", "16"]
    results, _ = _run(
        ["-e", "ref=reference", "--batch", "2", "--concurrency", "1"], tmp_path, monkeypatch, capsys, timing
    )
    point = results.load_points[0]
    assert point.requests == LoadRequests(sent=3, ok=3, errors={}, unsent=0, validated=0)  # no wire in-process
    assert point.latency_ms.service.p50 > 0 and point.server_metrics is None
    code, _, stderr = run_cli(
        ["load", "-e", "ref=reference", "--workers", "2", "--out", str(tmp_path / "two")], monkeypatch, capsys
    )
    assert code == 2 and "--workers 1" in stderr
