"""The closed loop driven from the connections' callbacks (bench/load/closed.py): the next request written from
the callback that delivered the answer, the general path taken where no connection is idle, and every answer
shape the coroutine loop read (content-length, chunked, the server closing, garbage) read alike."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from time import perf_counter

import pytest

from bench.load import worker
from bench.load.client import Connection, encode_request, target_of
from bench.load.closed import closed_loop
from bench.load.recorder import Outcome, Recorder
from bench.load.share import SharePlan
from bench.results.schema import Loop

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]"


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _plan(count: int, users: int = 1, target: str = "http://127.0.0.1:9/embed") -> SharePlan:
    url = target_of(target)
    request = encode_request(url, "POST", b"{}", {})
    return SharePlan(0, Loop.CLOSED, url, [request], [1], [1], perf_counter(), 0.0, None, count=count, users=users)


async def _fed(chunks: list[bytes]) -> tuple[list[int], Recorder]:
    """A closed loop of one user on one idle (fake) connection; each chunk handed to the protocol as the event
    loop would; how many requests had been written right after each chunk."""
    plan = _plan(count=len(chunks))
    recorder, sender = Recorder(plan), worker._Http(plan, plan.target)  # type: ignore[arg-type]
    transport = _Transport()
    connection = Connection(asyncio.get_running_loop(), release=sender.pool.release)
    connection.connection_made(transport)  # type: ignore[arg-type]  # the protocol only writes to it
    sender.pool.idle.append(connection)
    loop = asyncio.create_task(closed_loop(plan, sender, recorder))
    await asyncio.sleep(0)  # the first request written
    written = []
    for chunk in chunks:
        connection.data_received(chunk)
        written.append(len(transport.writes))
    await asyncio.wait_for(loop, 10)
    sender.close()
    return written, recorder


def test_the_next_request_is_written_from_the_answers_callback():
    """No loop pass between an answer's bytes and the next request: it is written before data_received returns."""
    written, recorder = asyncio.run(_fed([OK, OK, OK]))
    assert written == [2, 3, 3]  # the third answer ends the count: nothing more written
    assert recorder.result.ok == 3 and recorder.result.handled == 3


def test_a_second_answer_in_the_same_bytes_is_not_the_next_requests():
    """An answer no request asked for (two in one read) is dropped, as the Future's path drops it."""
    written, recorder = asyncio.run(_fed([OK + OK, OK]))
    assert written == [2, 2] and recorder.result.ok == 2


def test_a_failing_callback_fails_the_share_instead_of_hanging():
    class Broken(Recorder):
        def finish(self, *args: object) -> None:
            raise RuntimeError("a bug in the recorder")

    async def run() -> None:
        plan = _plan(count=2)
        sender = worker._Http(plan, plan.target)  # type: ignore[arg-type]
        connection = Connection(asyncio.get_running_loop(), release=sender.pool.release)
        connection.connection_made(_Transport())  # type: ignore[arg-type]
        sender.pool.idle.append(connection)
        loop = asyncio.create_task(closed_loop(plan, sender, Broken(plan)))
        await asyncio.sleep(0)
        connection.data_received(OK)
        try:
            await asyncio.wait_for(loop, 10)
        finally:
            sender.close()

    with pytest.raises(RuntimeError, match="a bug in the recorder"):
        asyncio.run(run())


ANSWERS = [
    OK,  # content-length, kept alive
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n1\r\n]\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]",  # the server closes: a new connection
    b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]",
    b"garbage, not HTTP\r\n\r\n",  # a protocol violation: the connection dropped
]


@pytest.fixture
def scripted_server() -> Iterator[str]:
    """A loopback server answering its Nth request of the whole run with ANSWERS[N % len(ANSWERS)]."""
    listener = socket.create_server(("127.0.0.1", 0))
    served = [0]
    lock = threading.Lock()

    def serve(conn: socket.socket) -> None:
        with conn:
            buffered = b""
            while True:
                while b"\r\n\r\n{}" not in buffered:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffered += data
                buffered = buffered.split(b"\r\n\r\n{}", 1)[1]
                with lock:
                    answer, served[0] = ANSWERS[served[0] % len(ANSWERS)], served[0] + 1
                conn.sendall(answer)
                if b"close" in answer or answer.startswith(b"garbage"):
                    return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/embed"
    listener.close()


def test_every_answer_shape_is_read_by_the_callback_loop(scripted_server):
    """Two users, 60 measured requests over a server that closes connections and answers 429s and garbage: each
    request counted once, by its class, and the closed connections replaced through the general path."""
    plan = _plan(count=60, users=2, target=scripted_server)
    result = worker.run_share(plan)
    assert result.sent == 60
    assert result.ok == 40  # 4 of every 6 answers are 200s
    assert result.errors == {Outcome.OVERLOADED: 10, Outcome.BAD_RESPONSE: 10}


def test_an_in_process_sender_runs_the_same_loop():
    calls: list[int] = []
    plan = SharePlan(0, Loop.CLOSED, None, [b"", b""], [1, 1], [1, 1], perf_counter(), 0.0, None, count=7, users=3)
    plan.call = calls.append
    result = worker.run_share(plan)
    assert result.sent == 7 and result.ok == 7 and len(calls) == 7
