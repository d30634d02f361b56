"""`quality --background`: the same targets measured idle and under an open-loop stream at their endpoint."""

import pytest

from bench.commands.background import expand_targets, parse_background
from bench.commands.quality import QualityRequest, quality_command
from bench.core.errors import InputError, UserError
from bench.results.store import read_results
from bench.targets.registry import parse_spec
from tests.quality.underload_fixture import UnderloadServer, write_long_queries


@pytest.fixture(scope="module")
def long_queries(tmp_path_factory):
    return write_long_queries(tmp_path_factory.mktemp("longq"))


@pytest.fixture
def server():
    server = UnderloadServer(max_inflight=3, service_ms=40).start()
    yield server
    server.shutdown()


def _quality(dataset, out, url, background=None, targets=("dense?embedder=emb",)):
    request = QualityRequest(
        dataset=dataset,
        targets=list(targets),
        endpoints=[f"emb=tei@{url}"],
        measures=["nDCG@10"],
        out=out,
        background=background,
    )
    quality_command(request)
    return read_results(out / "results.jsonl")


@pytest.mark.slow  # a 3.5 s background load
def test_truncation_under_load_is_detected_and_idle_equals_plain_run(long_queries, server, tmp_path):
    plain = _quality(long_queries, tmp_path / "plain", server.url)
    assert server.truncated == 0
    background = "emb@rate=250&batch=1&duration=3s&warmup=0.5s"
    loaded = _quality(long_queries, tmp_path / "bg", server.url, background, ("dense?embedder=emb", "bm25"))
    assert server.truncated > 0
    name = "dense?embedder=emb"
    idle, busy = f"{name}@bg0", f"{name}@bg250"
    assert [t.name for t in loaded.targets] == [idle, "bm25@bg0", busy, "bm25@bg250"]
    # bm25 sends nothing to the endpoint: the load does not move it.
    assert loaded.metric("bm25@bg250", "ndcg_cut_10").per_query == loaded.metric("bm25@bg0", "ndcg_cut_10").per_query
    # Rate 0 is a plain run: every query's nDCG the same, exactly.
    assert loaded.metric(idle, "ndcg_cut_10").per_query == plain.metric(name, "ndcg_cut_10").per_query
    assert plain.metric(name, "ndcg_cut_10").mean == 1.0
    assert loaded.metric(busy, "ndcg_cut_10").mean < 0.5
    (comparison,) = [c for c in loaded.comparisons if {c.a, c.b} == {idle, busy}]
    assert comparison.p_randomization_holm < 0.01
    (point,) = loaded.load_points  # one stream for the rate, over both of its targets
    assert point.endpoint == "emb" and point.rate == 250 and point.requests.ok > 0
    # The report names the queries that changed, and why (no error: the ranking changed).
    before, after = loaded.metric(idle, "ndcg_cut_10").per_query, loaded.metric(busy, "ndcg_cut_10").per_query
    changed = [qid for qid, value in before.items() if after[qid] != value]
    report = (tmp_path / "bg" / "report.md").read_text()
    assert "Quality under background load" in report
    assert f"| 250 | {changed[0]} | 1.0000 | {after[changed[0]]:.4f} | ranking changed |" in report


def test_background_spec_grammar_and_expansion():
    spec = parse_background("emb@rate=200,50,0&batch=8&arrival=constant")
    assert spec.rates == [0.0, 200.0, 50.0] and spec.batch == 8 and str(spec.arrival) == "constant"
    specs, rates = expand_targets([parse_spec("dense?embedder=emb"), parse_spec("b=bm25")], spec.rates)
    assert [s.name for s in specs][:3] == ["dense?embedder=emb@bg0", "b@bg0", "dense?embedder=emb@bg200"]
    assert rates["b@bg50"] == 50.0
    for bad in ("emb", "emb@batch=2", "emb@rate=x", "emb@rate=5&arrival=gamma:2", "emb@rate=5&speed=1"):
        with pytest.raises(UserError):
            parse_background(bad)


def test_background_names_a_given_endpoint(long_queries, tmp_path):
    with pytest.raises(UserError, match="no such endpoint"):
        _quality(long_queries, tmp_path / "x", "http://127.0.0.1:9", "other@rate=5")


def test_rates_as_fractions_of_a_size_results_saturation(tmp_path):
    from bench.commands.background import background_spec
    from bench.load.runner import load_header
    from bench.load.workload import Workload
    from bench.results.schema import Op, SaturationSummary, SizingRecord
    from bench.results.store import ResultsWriter

    spec = parse_background("emb@rate=0.5x,0.9x,30", saturation=200.0)
    assert spec.rates == [0.0, 100.0, 180.0, 30.0]
    with pytest.raises(UserError, match="--background-from"):
        parse_background("emb@rate=0.5x")
    with pytest.raises(UserError, match="positive fraction"):
        parse_background("emb@rate=-1x", saturation=200.0)
    path = tmp_path / "size" / "results.jsonl"
    writer = ResultsWriter(path)
    workload = Workload(["t"], ["q"], "texts", lambda texts: [1 for _ in texts], "words")
    sizing = SizingRecord("emb", Op.EMBED, None, 100.0, 0.001, SaturationSummary(240.0, 240.0, "p", None), [], "none")
    writer.write(load_header("size", workload, [], 0, {}), sizing)
    writer.close()
    assert background_spec("emb@rate=0.5x", path).rates == [0.0, 120.0]
    with pytest.raises(UserError, match="no saturation rate for endpoint other"):
        background_spec("other@rate=0.5x", path)


def test_failed_queries_are_counted_by_the_load_engines_classes():
    from bench.report.quality_under_load import errors_by_class
    from bench.results.schema import QueryRecord

    queries = [
        QueryRecord("t", "q1", None, 0, error="rerank failed: rr: HTTP 429: Model is overloaded"),
        QueryRecord("t", "q2", None, 0, error="emb: HTTP 422: batch size 64 > maximum allowed batch size 32"),
        QueryRecord("t", "q3", None, 0, error="emb: request timed out after 30 s"),
        QueryRecord("t", "q4", 12.0, 10),
    ]
    assert errors_by_class(queries) == "3 (429: 1, timeout: 1, too_large: 1)"
    assert errors_by_class(queries[3:]) == "0"


def test_a_suites_quality_takes_background(long_queries, tmp_path):
    from bench.cli.suite_file import load_suite

    suite = tmp_path / "suite.toml"
    text = f"""
[datasets]
longq = {{ path = "{long_queries}" }}
[endpoints]
emb = "tei@http://127.0.0.1:9"
[targets]
dense = "dense?embedder=emb"
[[quality]]
dataset = "longq"
targets = ["dense"]
background = "emb@rate=50,100&batch=4"
"""
    suite.write_text(text)
    (job,) = load_suite(suite).jobs
    assert job.request.background == "emb@rate=50,100&batch=4"
    suite.write_text(text.replace("emb@rate", "other@rate"))
    with pytest.raises(InputError, match="no such endpoint"):
        load_suite(suite)
