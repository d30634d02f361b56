"""Issue 50's hostile pass over `load --trace`, `size --trace`, `meter --record` and `ingest --record`: files never
overwritten, loops bounded, options checked as `load` and `size` check them, the trace's hash keyed per trace."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from bench.commands.ingest import check_record
from bench.commands.load_request import LoadRequest
from bench.commands.load_trace import trace_routes
from bench.commands.size import SizeRequest
from bench.commands.trace_options import check_load_trace, check_size_trace
from bench.core.errors import UserError
from bench.endpoints.meter import Meter
from bench.endpoints.meter_trace import CallKind, TraceCall, TraceWriter, is_trace_file, read_trace
from bench.endpoints.spec import parse_endpoint_spec
from bench.load.endpoint import LoadEndpoint
from bench.load.trace_replay import RouteReplay, TraceSettings, check_replay, loops_for, replay_plan, schedule_s
from bench.results.schema import Op
from bench.sizing.slo import Slo
from bench.sizing.trace_size import judge_replay
from tests.endpoints.test_meter import echo, upstream
from tests.harness.cli import run_cli_captured
from tests.harness.stubs import Whole
from tests.load.conftest import inline_workload

HEADER = '{"format": "ragbench-trace", "version": 1}\n'
ONE_CALL = HEADER + '{"at": 0.0, "route": "embedding", "kind": "embed", "lengths": [5]}\n'


def embed(at: float, lengths: tuple[int, ...] = (5,), route: str = "embedding") -> TraceCall:
    return TraceCall(at, route, CallKind.EMBED, lengths)


# --- loops bounded, texts built for what is sent -----------------------------------------------------------------
def test_a_one_call_trace_loops_once_a_period_not_once_a_millisecond():
    assert loops_for([embed(4.0)], 1.0, 3.0) == 3  # was 3,000 loops, a second apart


def test_calls_sharing_one_instant_are_not_scheduled_at_t0_over_and_over():
    calls = [embed(2.0)] * 1000
    loops = loops_for(calls, 1.0, 10.0)
    offsets = schedule_s(calls, loops)
    assert loops == 10 and len(np.unique(offsets)) == loops  # one burst a second, not 10⁴ bursts at t = 0


def test_a_cut_replay_builds_only_the_calls_it_sends():
    calls = [embed(float(i)) for i in range(500)]
    endpoint = LoadEndpoint(parse_endpoint_spec("e=tei@http://127.0.0.1:9"))
    plan = replay_plan(endpoint, calls, TraceSettings(window_s=9.5), inline_workload())
    assert len(plan.offsets) == 10 and len(plan.requests) == 10


@pytest.mark.parametrize("speed", [1e-320, 0.0, float("nan"), 1e300])
def test_a_speed_past_its_range_is_refused_before_anything(speed: float):
    with pytest.raises(UserError, match="--speed"):
        check_replay([embed(0.0), embed(5.0)], TraceSettings(speed=speed), inline_workload())


def test_a_trace_whose_requests_would_not_fit_load_memory_bound_is_refused():
    calls = [embed(i * 0.01, (200_000,) * 16) for i in range(500)]  # ~48 KB as a file, 1.6 GB of texts
    with pytest.raises(UserError, match="bytes of encoded requests"):
        check_replay(calls, TraceSettings(), inline_workload())


# --- options: load's and size's own checks, nothing ignored ------------------------------------------------------
def load_request(tmp_path: Path, **given) -> LoadRequest:
    return LoadRequest(endpoints=["e=tei@http://127.0.0.1:9"], out=tmp_path / "out", trace=tmp_path / "t", **given)


@pytest.mark.parametrize(
    ("given", "flag"),
    [
        ({"interleave": True}, "--interleave"),
        ({"min_throughput_ratio": "0.9"}, "--min-throughput-ratio"),
        ({"requests_csv": Path("rows.csv")}, "--requests-csv"),
        ({"rate": "10"}, "--rate"),
    ],
)
def test_load_trace_refuses_what_it_would_ignore(tmp_path: Path, given: dict, flag: str):
    with pytest.raises(UserError, match=flag):
        check_load_trace(load_request(tmp_path, **given))


def test_load_trace_checks_its_own_options_as_load_does(tmp_path: Path):
    with pytest.raises(UserError, match="--timeout"):
        check_load_trace(load_request(tmp_path, timeout="-1s"))
    check_load_trace(load_request(tmp_path, loop=True, duration="3s"))


def size_request(tmp_path: Path, **given) -> SizeRequest:
    return SizeRequest(
        endpoints=["e=tei@http://127.0.0.1:9"], out=tmp_path, trace=tmp_path / "t", slo="p99=1s", **given
    )


@pytest.mark.parametrize(
    ("given", "flag"),
    [
        ({"max_probes": 0}, "--max-probes"),
        ({"max_error_rate": 5.0}, "--max-error-rate"),
        ({"workers": 0}, "--workers"),
        ({"tolerance": 5.0}, "--tolerance"),
    ],
)
def test_size_trace_checks_what_size_checks(tmp_path: Path, given: dict, flag: str):
    with pytest.raises(UserError, match=flag):
        check_size_trace(size_request(tmp_path, **given))


def test_a_route_mapped_twice_is_refused_and_one_left_out_is_said():
    calls = [embed(0.0), embed(1.0, route="rerank")]
    with pytest.raises(UserError, match="mapped twice"):
        trace_routes(["a=tei@http://h:1", "b=tei@http://h:2"], ["embedding=a", "embedding=b"], calls)
    said: list[str] = []
    trace_routes(["a=tei@http://h:1"], ["embedding=a"], calls, said.append)
    assert said == ["not replayed (no --route): rerank (1 calls)"]


def test_a_route_is_not_refused_as_llm_for_one_body_the_meter_could_not_read():
    # the meter records a body that is no JSON as an LLM call of no texts (a 400 in the recording): when that call
    # came last, the whole embed route was refused as "LLM calls" (the route's kind was its last call's)
    unreadable = TraceCall(2.0, "embedding", CallKind.LLM, (), status=400)
    calls = [embed(0.0), embed(1.0), unreadable]
    assert trace_routes(["a=tei@http://h:1"], ["embedding=a"], calls)["embedding"][1] == Op.EMBED
    with pytest.raises(UserError, match="LLM calls"):  # a route of LLM calls only is still refused
        trace_routes(["a=tei@http://h:1"], ["embedding=a"], [unreadable])


def test_a_replay_where_every_call_failed_is_a_failure_even_at_error_rate_1():
    call = embed(0.0)
    failed = RouteReplay("embedding", "e", (call,) * 4, (0.0,) * 4, (0.0,) * 4, (1.0,) * 4, ("500",) * 4, (1,) * 4)
    verdict = judge_replay(1.0, [failed], Slo(100.0, max_error_rate=1.0))
    assert verdict.failed and "errors 4 of 4" in verdict.reason


def test_a_csv_trace_saved_with_a_bom_reads_its_first_column(tmp_path: Path):
    path = tmp_path / "t.csv"
    path.write_text("\ufeffat,route,kind,lengths\n0.5,embedding,embed,3;4\n", encoding="utf-8")
    assert read_trace(path)[0].at == 0.5


# --- files: never one ragbench did not write, its own only with --overwrite ------------------------------------
def test_record_never_truncates_a_file_ragbench_did_not_write(tmp_path: Path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "keep me"}\n')
    for overwrite in (False, True):
        with pytest.raises(UserError, match="not a file ragbench wrote"):
            check_record(corpus, {"embedding": "http://h"}, overwrite=overwrite)
    assert corpus.read_text() == '{"_id": "d1", "text": "keep me"}\n'


def test_record_replaces_an_earlier_trace_only_with_overwrite(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(ONE_CALL)
    assert is_trace_file(trace)
    with pytest.raises(UserError, match="--overwrite"):
        check_record(trace, {"embedding": "http://h"})
    check_record(trace, {"embedding": "http://h"}, overwrite=True)
    with pytest.raises(UserError, match=r"writes its own results\.jsonl"):
        check_record(tmp_path / "results.jsonl", {"embedding": "http://h"}, out=tmp_path)


def test_meter_record_refuses_an_existing_file_before_it_listens(tmp_path: Path):
    mine = tmp_path / "private.jsonl"
    mine.write_text("someone's data\n")
    code, _, stderr = run_cli_captured("meter", "--upstream", "e=http://127.0.0.1:9", "--record", str(mine))
    assert code == 2 and "--record" in stderr and mine.read_text() == "someone's data\n"


def test_load_trace_refuses_an_out_file_and_an_earlier_replay_before_any_work(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(ONE_CALL)
    args = ["load", "-e", "e=tei@http://127.0.0.1:9", "--trace", str(trace), "--route", "embedding=e", "--out"]
    a_file = tmp_path / "out.txt"
    a_file.write_text("x")
    code, _, stderr = run_cli_captured(*args, str(a_file))
    assert code == 2 and "is a file" in stderr
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "trace-replay.json").write_text('{"routes": []}')
    code, _, stderr = run_cli_captured(*args, str(earlier))
    assert code == 2 and "--overwrite" in stderr and (earlier / "trace-replay.json").read_text() == '{"routes": []}'


def test_size_trace_refuses_an_earlier_trace_size_without_overwrite(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(ONE_CALL)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "trace-size.json").write_text("{}")
    code, _, stderr = run_cli_captured(
        "size", "-e", "e=tei@http://127.0.0.1:9", "--trace", str(trace), "--route", "embedding=e",
        "--slo", "p99=1s", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 2 and "--overwrite" in stderr and (tmp_path / "out" / "trace-size.json").read_text() == "{}"


# --- the trace: a keyed hash, and only model calls -------------------------------------------------------------
def test_the_hash_tells_repeats_within_a_trace_but_confirms_no_guessed_body(tmp_path: Path):
    one, two = TraceWriter(tmp_path / "a.jsonl", 0.0), TraceWriter(tmp_path / "b.jsonl", 0.0)
    body = b'{"inputs": ["a guessed secret"]}'
    assert one.digest(body) == one.digest(body) != one.digest(b'{"inputs": ["other"]}')
    assert one.digest(body) != two.digest(body)  # another trace, another key
    plain = {hashlib.sha1(body).hexdigest(), hashlib.sha256(body).hexdigest()}
    assert not any(known.startswith(one.digest(body)) for known in plain)
    one.close(), two.close()
    assert json.loads((tmp_path / "a.jsonl").read_text().splitlines()[0])["hash"] == "hmac-sha256"


def test_a_call_with_no_body_is_no_traffic(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    with upstream(Whole(echo)) as url, Meter({"embedding": url}, record=trace) as meter:
        httpx.get(f"{meter.url}/embedding/info", timeout=10)  # load's own preflight through the meter
        httpx.post(f"{meter.url}/embedding/embed", json={"inputs": ["ab"]}, timeout=10)
    assert [(c.kind, c.lengths) for c in read_trace(trace)] == [(CallKind.EMBED, (2,))]


def test_a_full_disk_after_the_replay_says_what_was_written_exit_3(tmp_path: Path, monkeypatch):
    import errno

    from bench.commands import load_trace
    from bench.core.errors import MeasurementFailed

    def full(folder: Path) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(load_trace, "write_trace_report", full)
    request = load_request(tmp_path)
    with pytest.raises(MeasurementFailed, match=r"trace-replay\.json is complete .*\(No space left on device\)"):
        load_trace.write_replay(request, TraceSettings(), [])
    assert json.loads((request.out / "trace-replay.json").read_text())["routes"] == []


def test_size_trace_applies_load_memory_bound_before_anything_is_sent(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    line = {"route": "embedding", "kind": "embed", "lengths": [200_000] * 16}
    trace.write_text(HEADER + "".join(json.dumps({"at": i * 0.01, **line}) + "\n" for i in range(500)))
    code, _, stderr = run_cli_captured(
        "size", "-e", "e=tei@http://127.0.0.1:9", "--trace", str(trace), "--route", "embedding=e",
        "--slo", "p99=1s", "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert code == 2 and "bytes of encoded requests" in stderr and not (tmp_path / "out").exists()
