"""The metering proxy on its own: unchanged pass-through, streamed replies, counted usage, failures."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import httpx
import pytest

from bench.core.http import MIB
from bench.endpoints.meter import Meter, MeterClient, cost, usage_from_body
from bench.endpoints.meter_relay import MAX_REQUEST_BYTES, USAGE_BODY_CAP
from bench.endpoints.meter_usage import decode_body
from tests.harness.llm_double import LLMDouble
from tests.harness.process import free_port
from tests.harness.stubs import Cut, JsonStub, RawBody, Seen, Whole


def echo(seen: Seen) -> tuple[int, RawBody]:
    """Answers with the method, path, headers and body it received (and no `usage`)."""
    answer = {
        "method": seen.method,
        "path": seen.path,
        "headers": dict(seen.headers.items()),
        "body": seen.body.decode(),
    }
    return 201, RawBody("application/json", json.dumps(answer).encode(), (("X-Upstream", "echo"),))


@contextmanager
def upstream(default: object, routes: dict[tuple[str, str], object] | None = None) -> Iterator[str]:
    """A stub on loopback for the test's meter to forward to (the meter relays the wire itself): `routes` by
    (method, path), `default` for every other request. Its URL."""
    stub = JsonStub(routes or {}, default)
    try:
        yield stub.url
    finally:
        stub.stop()


def raw_connection(meter: Meter) -> http.client.HTTPConnection:
    """A client that sends headers exactly as given (httpx would add its own)."""
    host, port = meter.url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=10)


def test_request_and_reply_pass_through_unchanged():
    with upstream(Whole(echo)) as echo_url, Meter({"up": f"{echo_url}/base"}) as meter:
        conn = raw_connection(meter)
        sent = {"Authorization": "Bearer secret-token", "X-Custom": "1", "Content-Type": "application/json"}
        conn.request("POST", "/up/v1/thing?x=1&y=2", body=b'{"a": 1}', headers=sent)
        reply = conn.getresponse()
        seen = json.loads(reply.read())
        assert reply.status == 201 and reply.getheader("X-Upstream") == "echo"
        assert seen["path"] == "/base/v1/thing?x=1&y=2" and seen["body"] == '{"a": 1}'
        forwarded = {k.lower(): v for k, v in seen["headers"].items() if k.lower() not in ("host", "content-length")}
        original = {k.lower(): v for k, v in sent.items()} | {"accept-encoding": "identity"}  # http.client's own
        assert forwarded == original  # nothing added, nothing dropped
        usage = MeterClient(meter.url).snapshot()["up"]
        assert (usage.calls, usage.calls_without_usage, usage.prompt_tokens) == (1, 1, 0)


def test_streamed_and_plain_replies_are_counted_as_the_double_reports():
    with LLMDouble() as llm, Meter({"llm": llm.base_url}) as meter:
        client = MeterClient(meter.url)
        before = client.snapshot()
        plain = httpx.post(
            f"{meter.url}/llm/chat/completions",
            timeout=10,
            json={
                "model": "m",
                "messages": [
                    {
                        "role": "user",
                        "content": "User Query: what causes glioma growth? high_level_keywords ---Output---",
                    }
                ],
            },
        )
        streamed = httpx.post(
            f"{meter.url}/llm/chat/completions",
            timeout=10,
            json={
                "model": "m",
                "stream": True,
                "messages": [{"role": "user", "content": "---Input Text---\n```\nMarie Curie studied radium.\n```"}],
            },
        )
        assert plain.status_code == streamed.status_code == 200
        assert "high_level_keywords" in plain.json()["choices"][0]["message"]["content"]
        events = [
            json.loads(line[5:])
            for line in streamed.text.splitlines()
            if line.startswith("data:") and "[DONE]" not in line
        ]
        assert "entity<|#|>" in events[0]["choices"][0]["delta"]["content"]
        spent = cost(before, client.snapshot())
        sent = llm.totals()
        assert spent["llm_calls"] == sent["calls"] == 2
        assert spent["llm_prompt_tokens"] == sent["prompt_tokens"]
        assert spent["llm_completion_tokens"] == sent["completion_tokens"]
        assert spent["llm_calls_without_usage"] == 0


def test_an_unreachable_upstream_is_a_502_and_an_error():
    with Meter({"llm": f"http://127.0.0.1:{free_port()}/v1"}) as meter:
        reply = httpx.post(f"{meter.url}/llm/chat/completions", json={}, timeout=10)
        assert reply.status_code == 502 and "upstream llm failed" in reply.json()["error"]
        assert httpx.post(f"{meter.url}/other/x", json={}, timeout=10).status_code == 404
        usage = MeterClient(meter.url).snapshot()["llm"]
        assert (usage.calls, usage.errors) == (1, 1)


def test_a_reply_nested_too_deeply_has_no_usage_and_no_traceback():
    deep = b"[" * 100_000
    assert usage_from_body(deep, "application/json") is None
    assert usage_from_body(b"data: " + deep + b'\ndata: {"usage": {"total_tokens": 3}}\n', "text/event-stream") == {
        "total_tokens": 3
    }


def refusing() -> Callable[[bytes], tuple[int, RawBody]]:
    """An embedder that refuses a body the first time it sees it (429), then answers with TEI's timing header."""
    seen: set[bytes] = set()

    def answer(body: bytes) -> tuple[int, RawBody]:
        first = body not in seen
        seen.add(body)
        return 429 if first else 200, RawBody("application/json", b'{"data": []}', (("x-total-time", "250"),))

    return answer


def test_texts_refusals_retries_and_upstream_time_are_counted_per_call():
    with upstream(refusing()) as refusing_url, Meter({"embedding": refusing_url}, log_calls=True) as meter:
        three = {"input": ["a", "b", "c"], "model": "m"}
        statuses = [
            httpx.post(f"{meter.url}/embedding/embeddings", json=body, timeout=10).status_code
            for body in (three, three, {"input": "one", "model": "m"})
        ]
        assert statuses == [429, 200, 429]
        calls = meter.calls_since(0)
        assert [c.texts for c in calls] == [3, 3, 1]
        assert [c.retry for c in calls] == [False, True, False]  # the same body again after a refusal
        assert [c.status_class for c in calls] == ["429", "ok", "429"]
        assert all(c.upstream_s == 0.25 for c in calls)
        usage = MeterClient(meter.url).snapshot()["embedding"]
        assert (usage.calls, usage.texts, usage.status_429, usage.retries, usage.errors) == (3, 7, 2, 1, 2)
        assert usage.upstream_seconds == 0.75
        assert meter.calls_since(2) == calls[2:]
        assert calls[0].request is not None and calls[0].request.path == "embeddings"
        assert json.loads(calls[0].request.body) == three


SLOW_S = 0.3  # how long the slow upstream takes to answer every POST
BOOKKEEPING_S = SLOW_S  # the margin for the meter's own bookkeeping on a busy machine (see its test)


def slow(body: bytes) -> tuple[int, object]:
    threading.Event().wait(SLOW_S)
    return 200, {}


def test_busy_time_counts_overlapping_calls_of_a_route_once():
    """Four calls at once each take SLOW_S: the route's `seconds` adds them up, its busy time is the stretch in
    which any was in flight (what a caller waited), so a query's hop split does not count them four times."""
    together = threading.Barrier(4)  # the four wait for each other upstream: they overlap on any machine

    def slow_together(body: bytes) -> tuple[int, object]:
        with suppress(threading.BrokenBarrierError):  # the fifth call comes alone: the barrier is broken by then
            together.wait(timeout=30)
        return slow(body)

    with upstream(slow_together) as slow_url, Meter({"up": slow_url}) as meter:
        threads = [
            threading.Thread(target=httpx.post, args=(f"{meter.url}/up/x",), kwargs={"content": b"{}", "timeout": 60})
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together.abort()
        httpx.post(f"{meter.url}/up/x", content=b"{}")  # one more, alone
        usage = MeterClient(meter.url).snapshot()["up"]
    assert usage.calls == 5
    assert usage.seconds >= 5 * SLOW_S
    # Two stretches: the four together and the fifth alone, each at least SLOW_S. The four were all in flight through
    # a common SLOW_S (the barrier), so counted once the busy time is 3 x SLOW_S below the sum of the calls' times,
    # however late a thread started; counted four times it equals that sum. BOOKKEEPING_S: a stretch ends when the
    # meter records its last call, after that call's own time was taken; a busy machine can delay that by a
    # scheduler slice or a few (~10 ms each), and SLOW_S of it leaves the bug's 3 x SLOW_S gap still found.
    assert 2 * SLOW_S <= usage.busy_seconds <= usage.seconds - 3 * SLOW_S + BOOKKEEPING_S


def test_a_header_value_with_trailing_space_is_forwarded_not_refused():
    """Open WebUI 0.12.4 sends `Authorization: Bearer ` to a reranker without a key; the meter must pass it on
    (as `Bearer`: whitespace around a value is not part of it), not answer 502."""
    with upstream(Whole(echo)) as echo_url, Meter({"up": echo_url}) as meter:
        conn = raw_connection(meter)
        conn.request("POST", "/up/rerank", body=b"{}", headers={"Authorization": "Bearer "})
        reply = conn.getresponse()
        seen = json.loads(reply.read())
    assert reply.status == 201
    assert seen["headers"]["Authorization"] == "Bearer"


BIG = 20 * MIB


def hostile() -> dict[tuple[str, str], object]:
    """An upstream with broken replies, by path: a truncated gzip body, a reply that dies midway (it promises
    100,000 bytes, sends 10 and goes), a big reply (megabytes of vectors, then a usage the meter may not hold the
    reply to read)."""
    truncated = gzip.compress(b'{"usage": {"total_tokens": 3}}')[:15]
    big = b'{"data": "' + b"x" * BIG + b'", "usage": {"total_tokens": 3}}'
    return {
        ("POST", "/truncated-gzip"): (200, RawBody("application/json", truncated, (("Content-Encoding", "gzip"),))),
        ("POST", "/dies"): (200, Cut(b"x" * 10, promised=100_000)),
        ("POST", "/big"): (200, RawBody("application/json", big)),
    }


def test_a_truncated_gzip_reply_is_counted_without_usage_not_a_traceback_and_a_call_left_in_flight(capsys):
    with upstream((404, {}), hostile()) as url, Meter({"up": url}) as meter:
        assert httpx.post(f"{meter.url}/up/truncated-gzip", content=b"{}", timeout=10).status_code == 200
        assert meter.wait_idle(quiet_s=0.0, timeout_s=5.0)  # the call ended: nothing left in flight
        usage = MeterClient(meter.url).snapshot()["up"]
    assert (usage.calls, usage.calls_without_usage, usage.total_tokens) == (1, 1, 0)
    assert "Traceback" not in capsys.readouterr().err


def test_an_upstream_that_dies_mid_reply_cuts_the_clients_reply_at_once_not_at_its_timeout():
    """The meter closes the client's connection with the reply unterminated: the client sees a broken reply now,
    where it used to wait for the rest of a chunked body until its own timeout."""
    with upstream((404, {}), hostile()) as url, Meter({"up": url}) as meter:
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(f"{meter.url}/up/dies", content=b"{}", timeout=10)
        usage = MeterClient(meter.url).snapshot()["up"]
    assert usage.calls == 1


def test_a_reply_past_what_is_kept_for_usage_is_relayed_whole_its_usage_unknown():
    with upstream((404, {}), hostile()) as url, Meter({"up": url}) as meter:
        reply = httpx.post(f"{meter.url}/up/big", content=b"{}", timeout=30)
        usage = MeterClient(meter.url).snapshot()["up"]
    assert len(reply.content) > BIG > USAGE_BODY_CAP  # passed through unchanged
    assert (usage.calls, usage.calls_without_usage, usage.total_tokens) == (1, 1, 0)


def test_a_small_gzip_reply_that_unpacks_past_the_cap_is_not_unpacked():
    packer = zlib.compressobj(wbits=31)
    bomb = b"".join(packer.compress(b"\0" * MIB) for _ in range(4)) + packer.flush()
    assert decode_body(bomb, "gzip", MIB) is None
    assert decode_body(bomb, "gzip", 8 * MIB) == b"\0" * 4 * MIB


@pytest.mark.parametrize(
    ("headers", "status", "said"),
    [
        ("Content-Length: abc", 400, "Content-Length 'abc' is not a length"),
        ("Content-Length: -5", 400, "Content-Length '-5' is not a length"),
        ("Transfer-Encoding: chunked", 411, "a chunked request body"),
        (f"Content-Length: {MAX_REQUEST_BYTES + 1}", 413, "past the meter's cap"),
    ],
)
def test_a_request_the_meter_cannot_read_is_refused_in_one_answer(headers, status, said, capsys):
    with upstream(Whole(echo)) as url, Meter({"up": url}) as meter:
        host, port = meter.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(f"POST /up/x HTTP/1.1\r\nHost: m\r\n{headers}\r\n\r\n".encode())
            answer = conn.makefile("rb").read()  # to the end: the meter closes the connection
        assert meter.calls_total == 0  # nothing forwarded
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status}".encode()) and said in json.loads(body)["error"]
    assert "Traceback" not in capsys.readouterr().err


def test_a_client_that_stops_mid_request_is_dropped_after_the_client_timeout():
    with upstream(Whole(echo)) as url, Meter({"up": url}, client_timeout_s=0.2) as meter:
        host, port = meter.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as conn:
            conn.sendall(b"POST /up/x HTTP/1.1\r\nHost: m\r\nContent-Length: 100\r\n\r\nabc")
            assert conn.recv(100) == b""  # closed by the meter, long before this socket's own timeout


def test_an_upstream_route_given_twice_is_refused_not_replaced(ragbench):
    code, out, err = ragbench(
        "meter", "--upstream", "llm=http://alice:secret@h1", "--upstream", "llm=http://bob:pw2@h2", "--port", "0"
    )
    assert code == 2 and out == ""
    assert "route 'llm' is given twice" in err and err.count("\n") == 1
    assert "secret" not in err and "pw2" not in err


def test_a_call_is_counted_before_the_client_has_the_end_of_its_reply(monkeypatch):
    """A caller that reads the totals right after its call (one query's cost and hop split) must find the call in
    them: the meter used to count it after writing the reply's last chunk, so on a busy machine it fell into the
    next query's difference. A count held back here stands in for that busy machine."""
    with upstream(Whole(echo)) as url, Meter({"up": url}) as meter:
        record = meter.record

        def late_record(*args: object) -> None:
            threading.Event().wait(0.3)
            record(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(meter, "record", late_record)
        assert httpx.post(f"{meter.url}/up/x", content=b"{}", timeout=10).status_code == 201
        assert MeterClient(meter.url).snapshot()["up"].calls == 1
