"""`quality --background`: the same targets measured idle and under an open-loop stream at their endpoint."""

import re

import pytest

from bench.core.errors import InputError, UserError
from bench.quality.background_spec import Sized, expand_targets, parse_background
from bench.results.store import read_results
from bench.targets.registry import parse_target_spec
from tests.quality.underload_fixture import UnderloadServer, ndcg_at_10, write_long_queries


@pytest.fixture(scope="module")
def long_queries(tmp_path_factory):
    return write_long_queries(tmp_path_factory.mktemp("longq"))


@pytest.fixture
def server():
    server = UnderloadServer(max_inflight=3, service_ms=40).start()
    yield server
    server.shutdown()


def _quality(dataset, out, url, background=None, targets=("dense?embedder=emb",)):
    return ndcg_at_10(dataset, out, list(targets), f"emb=tei@{url}", background)


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
    specs, rates = expand_targets([parse_target_spec("dense?embedder=emb"), parse_target_spec("b=bm25")], spec.rates)
    assert [s.name for s in specs][:3] == ["dense?embedder=emb@bg0", "b@bg0", "dense?embedder=emb@bg200"]
    assert rates["b@bg50"] == 50.0
    for bad in ("emb", "emb@batch=2", "emb@rate=x", "emb@rate=5&arrival=gamma:2", "emb@rate=5&speed=1"):
        with pytest.raises(UserError):
            parse_background(bad)
    with pytest.raises(UserError, match="rate 1,000,000/s: 11,000,000 requests per point, at most 10,000,000"):
        parse_background("emb@rate=1000000&duration=10s")  # refused before anything runs, not when its stream starts


def test_background_names_a_given_endpoint(long_queries, tmp_path):
    with pytest.raises(UserError, match="no such endpoint"):
        _quality(long_queries, tmp_path / "x", "http://127.0.0.1:9", "other@rate=5")


def test_rates_as_fractions_of_a_size_results_saturation(tmp_path):
    from bench.load.sweep import load_header
    from bench.load.workload import Workload
    from bench.quality.background_spec import background_spec, past_saturation
    from bench.results.schema import Op, SaturationSummary, SizingRecord
    from bench.results.writer import ResultsWriter

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
    assert background_spec("emb@rate=0.5x", path).sized == Sized(240.0, None, "words")
    with pytest.raises(UserError, match=r"no saturation rate for endpoint other \(it holds emb: name the -e endpoint"):
        background_spec("other@rate=0.5x", path)
    assert past_saturation(background_spec("emb@rate=0.5x", path)) == []
    assert past_saturation(background_spec("emb@rate=0.5x,4x", path)) == [
        "--background: rate 960/s is 4.0x the saturation rate the size run measured for emb (240/s): its queue grows "
        "while the stream runs, and the server goes on draining it after the run"
    ]


def test_the_stream_sends_texts_of_the_size_runs_length_or_says_it_cannot(tmp_path, capsys):
    from bench.load.sweep import load_header
    from bench.load.workload import Workload
    from bench.quality.background import stream_length
    from bench.quality.background_spec import background_spec
    from bench.results.schema import Op, SaturationSummary, SizingRecord
    from bench.results.writer import ResultsWriter

    corpus = Workload(["one two three four five six", "seven eight"], ["q"], "c", lambda t: [1 for _ in t], "words")
    for counted_by in ("words", "tokenizer"):
        path = tmp_path / counted_by / "results.jsonl"
        writer = ResultsWriter(path)
        workload = Workload(["t"], ["q"], "texts", lambda texts: [1 for _ in texts], counted_by)
        sizing = SizingRecord("emb", Op.EMBED, 4, 100.0, 0.001, SaturationSummary(240.0, 240.0, "p", None), [], "none")
        writer.write(load_header("size", workload, [], 0, {}), sizing)
        writer.close()
        sized = background_spec("emb@rate=0.5x", path).sized
        assert sized == Sized(240.0, 4, counted_by)
        assert stream_length(corpus, sized) == 4  # the stream's points are cut to it (PointConfig.length)
    said = " ".join(capsys.readouterr())
    assert "sends 4-word texts, as the size run" in said and "cannot cut by it and sends 4-word texts" in said
    assert stream_length(corpus, Sized(240.0, 128, "words")) is None  # 8 words in all: not one 128-word text
    assert "too few to cut one: the stream cannot" in " ".join(capsys.readouterr())
    assert stream_length(corpus, Sized(240.0, None, "words")) is None  # the size run sent its texts as they were


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


def test_a_changed_query_says_why_with_its_warnings():
    from bench.report.quality_under_load import why_changed
    from bench.results.schema import QueryRecord

    assert why_changed(QueryRecord("t", "q", 5.0, 10)) == "ranking changed"
    fallback = QueryRecord("t", "q", 5.0, 10, warnings=["null-scores", "more-results-than-asked"])
    assert why_changed(fallback) == "ranking changed (null-scores, more-results-than-asked)"  # Open WebUI's fallback
    assert why_changed(QueryRecord("t", "q", 5.0, 0, warnings=["null-scores"])) == "empty result"
    assert why_changed(QueryRecord("t", "q", 5.0, 0, error="HTTP 400")) == "error: HTTP 400"
    assert why_changed(None) == "not ranked"


def test_a_suites_quality_takes_background(long_queries, tmp_path):
    from bench.cli.suite import load_suite

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


def test_a_stream_stops_when_the_last_search_of_its_rate_is_done(long_queries, server):
    """Planned for four minutes (a minute of idle searches), the stream ends with its rate's search: its record is
    the window it ran, and what it never scheduled is not `unsent`."""
    import threading

    from bench.commands.quality import endpoint_specs
    from bench.datasets import load_dataset
    from bench.quality.background import background_load

    spec = parse_background("emb@rate=50&duration=0.2s&warmup=0.1s")
    rates = {"t@bg0": 0.0, "t@bg50": 50.0}
    with background_load(spec, endpoint_specs([f"emb=tei@{server.url}"]), load_dataset(long_queries), rates) as load:
        load.idle_s = 60.0
        with load.around_search("t@bg50") as records:
            threading.Event().wait(0.5)  # the search
    (point,) = records
    assert point.rate == 50 and 0.2 <= point.duration_s < 60.0
    assert point.requests.ok == point.requests.sent > 0 and point.requests.unsent == 0


def _session(sid: int) -> list[int]:
    """The processes still running in session `sid` (a command's orphaned workers would be; an exited one waiting
    for its new parent to reap it, a zombie, runs nothing)."""
    import os
    from pathlib import Path

    found = []
    for entry in Path("/proc").iterdir():
        try:
            running = entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            if running and os.getsid(int(entry.name)) == sid:
                found.append(int(entry.name))
        except OSError:  # gone meanwhile
            pass
    return found


def _ragbench(moments: str, *args: str):
    import os
    import subprocess
    import sys
    import time

    from tests.quality.test_interruption import ROOT

    command = [sys.executable, "-m", "tests.quality.interrupt_driver", moments, "quality", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The command leads a session of its own (setsid): whatever it leaves running is found there.
    pipe = subprocess.PIPE
    process = subprocess.Popen(command, cwd=ROOT, env=env, text=True, stdout=pipe, stderr=pipe, start_new_session=True)
    stdout, stderr = process.communicate(timeout=300)
    for _ in range(100):  # the multiprocessing resource tracker ends once its pipe closes: wait for it
        if not _session(process.pid):
            break
        time.sleep(0.05)
    return process.returncode, stdout + stderr, _session(process.pid)


@pytest.mark.slow  # a subprocess stopped by a signal, then resumed
def test_sigterm_keeps_finished_rates_and_their_streams_resume_runs_the_rest_and_no_secret_leaks(
    long_queries, server, tmp_path
):
    out = tmp_path / "out"
    url = server.url.replace("http://", "http://user:s3cretPW@")
    args = ["--dataset", str(long_queries), "-e", f"emb=tei@{url}", "-t", "scripted", "-m", "nDCG@10"]
    args += ["--background", "emb@rate=20,40&duration=0.5s&warmup=0.1s", "--out", str(out)]
    code, said, left = _ragbench("searching-3=SIGTERM", *args)  # scripted@bg40's search: bg0 and bg20 done
    assert code == 143 and left == [], said
    # The client stopped sending, not the server serving what it queued: said, for the next command's sake.
    assert "stopped during the 40/s stream to emb: the server may still be draining" in " ".join(said.split())
    stopped = read_results(out / "results.jsonl")
    assert stopped.end.status == "interrupted" and "SIGTERM" in stopped.end.error
    assert [t.name for t in stopped.targets] == ["scripted@bg0", "scripted@bg20"]
    assert [p.rate for p in stopped.load_points] == [20.0]

    code, resumed_said, left = _ragbench("", *args[:-2], "--resume", str(out))
    assert code == 0 and left == [], resumed_said
    resumed = read_results(out / "results.jsonl")
    assert [t.name for t in resumed.targets] == ["scripted@bg0", "scripted@bg20", "scripted@bg40"]
    assert [p.rate for p in resumed.load_points] == [20.0, 40.0]  # the finished rate's stream kept, the re-run's own
    assert resumed.load_points[0] == stopped.load_points[0]
    written = [(out / name).read_text() for name in ("results.jsonl", "report.md", "report.html")]
    for text in [said, resumed_said, *written]:
        assert "s3cretPW" not in text and "dXNlcjpzM2NyZXRQVw" not in text  # nor its Basic-auth base64


def _cli(dataset, url, background, out, monkeypatch, capsys, target="bm25"):
    from tests.harness.cli import run_cli

    args = ["quality", "--dataset", str(dataset), "-e", f"emb=tei@{url}", "-t", target, "-m", "nDCG@10"]
    return run_cli([*args, "--background", background, "--out", str(out)], monkeypatch, capsys)


@pytest.mark.parametrize("status, cls", [(500, "5xx"), pytest.param(401, "4xx", marks=pytest.mark.slow)])
def test_a_stream_with_no_success_leaves_its_runs_not_measured_under_load(
    status, cls, long_queries, tmp_path, monkeypatch, capsys
):
    """The endpoint answers the preflight, then `status` to every request of the stream: bm25 (which sends it
    nothing) ranks as well as idle, but not under load. Exit 3, one closing line with the rate and the cause; the
    report and `compare` say the loaded run is not measured under load rather than reading it as one."""
    from bench.gate.checks import Status
    from bench.gate.compare import compare_results
    from bench.gate.config import GateConfig
    from bench.quality.under_load import not_under_load

    background = "emb@rate=50&duration=0.3s&warmup=0.1s"
    server = UnderloadServer(max_inflight=100, service_ms=1, fail_after=1, fail_status=status).start()
    healthy = UnderloadServer(max_inflight=100, service_ms=1).start()
    try:
        code, _, err = _cli(long_queries, server.url, background, tmp_path / "bad", monkeypatch, capsys)
        good_code, _, good_err = _cli(long_queries, healthy.url, background, tmp_path / "good", monkeypatch, capsys)
    finally:
        server.shutdown(), healthy.shutdown()
    assert server.failed > 0 and good_code == 0, good_err
    assert code == 3, err
    closing = err.strip().splitlines()[-1]
    bad, good = read_results(tmp_path / "bad" / "results.jsonl"), read_results(tmp_path / "good" / "results.jsonl")
    (point,) = bad.load_points
    sent = point.requests.sent
    assert point.status == "failed" and point.requests.ok == 0 and sent > 0
    assert closing == (
        f"ragbench: error: bm25@bg50 not measured under load: its 50/s stream to emb: no request succeeded: {sent} "
        f"sent ({cls} {sent}) (report: {tmp_path / 'bad' / 'report.html'})"
    )
    assert list(not_under_load(bad)) == ["bm25@bg50"] and not_under_load(good) == {}
    report = (tmp_path / "bad" / "report.md").read_text()
    assert "**bm25@bg50 is not measured under load**: its 50/s stream to emb: no request succeeded" in report
    # bm25 matches one document of this corpus: R@k past it is labelled (a ranking shorter than the cut-off)
    assert "| 50 (not measured under load) | 1.0000 [1.0000, 1.0000] over 1 document | – | – |" in report
    checks, _ = compare_results(good, bad, GateConfig())
    loaded = {c.name: c for c in checks if c.name.startswith("bm25@bg50 ")}
    assert [(c.status, "not measured under load" in c.summary) for c in loaded.values()] == [(Status.FAIL, True)]
    checks, _ = compare_results(bad, good, GateConfig())  # the baseline's stream failed: nothing to gate against
    (check,) = [c for c in checks if c.name.startswith("bm25@bg50 ")]
    assert check.status == Status.INFO and "baseline's bm25@bg50 is not measured under load" in check.not_gated


@pytest.mark.slow  # two quality runs, each with its stream
def test_a_stream_past_its_error_limit_fails_the_run_unless_the_limit_allows_it(long_queries, tmp_path):
    """A third of the stream's requests fail: past load's default --max-error-rate (0.001), within 0.5."""
    from bench.core.errors import MeasurementFailed

    server = UnderloadServer(max_inflight=100, service_ms=1, fail_after=1, fail_every=3).start()
    background = "emb@rate=100&duration=2s&warmup=0.1s&arrival=constant"
    try:
        with pytest.raises(MeasurementFailed, match=r"bm25@bg100 not measured under load: .*: error rate 3\d\.\d+%"):
            _quality(long_queries, tmp_path / "strict", server.url, background, ("bm25",))
        allowed = _quality(long_queries, tmp_path / "lax", server.url, background + "&max_error_rate=0.5", ("bm25",))
    finally:
        server.shutdown()
    (point,) = allowed.load_points
    # Within the limit: not `errors` (nor `failed`). `behind` is allowed too: judge() checks the error rate first, so
    # either status says the limit let the errors through, and a client starved by a busy machine (load average 16
    # once stretched the 2 s window past the ninth `behind` allows) must not fail a test about error limits.
    assert point.status in ("ok", "behind") and point.max_error_rate == 0.5, point.problem
    assert sum(point.requests.errors.values()) > 0


def test_a_rate_too_low_to_send_in_its_window_is_said_as_such(long_queries, server, tmp_path):
    from bench.core.errors import MeasurementFailed

    background = "emb@rate=0.05&arrival=constant&duration=0.3s&warmup=0.1s"  # its first request, at 0, warms up
    with pytest.raises(MeasurementFailed) as failed:
        _quality(long_queries, tmp_path / "low", server.url, background, ("bm25",))
    assert "no request was due in its 0.3 s window at 0.05/s (a higher rate or a longer duration=" in str(failed.value)
    assert "hung" not in str(failed.value)


def test_rates_are_named_exactly_and_a_rate_of_nothing_is_refused():
    from bench.quality.under_load import loaded_name, split_loaded_name

    spec = parse_background("emb@rate=1234.6789,1234.68,0.05,1000000")
    specs, rates = expand_targets([parse_target_spec("b=bm25")], spec.rates)
    assert [s.name for s in specs] == ["b@bg0", "b@bg1234.6789", "b@bg1234.68", "b@bg0.05", "b@bg1000000"]
    assert all(split_loaded_name(name) == ("b", rate) for name, rate in rates.items())  # the stream's rate, exactly
    assert loaded_name("b", 0.1 + 0.2) == "b@bg0.30000000000000004"  # not merged with 0.3
    assert parse_background("emb@rate=0").rates == [0.0]  # the idle run alone, as documented
    refused = {
        "emb@rate=": "rate= is empty",
        "emb@rate=,": "rate= is empty",
        "emb@rate=1e-400": "rate 1e-400 rounds to 0 requests/s",
        "emb@rate=100,100.00000000000000001": (
            "100.00000000000000001 is listed twice (100 and 100.00000000000000001 are the same number to a float)"
        ),
        "emb@rate=5&max_error_rate=2": "max_error_rate '2': at most 1 errors per request",
        "emb@rate=5&batch=true": "batch 'true': expected a whole number",
    }
    for text, words in refused.items():
        with pytest.raises(UserError, match=re.escape(words)):
            parse_background(text)
    with pytest.raises(UserError, match=re.escape("rate 0.000001x of 200/s rounds to 0 requests/s")):
        parse_background("emb@rate=0.000001x", saturation=200.0)
