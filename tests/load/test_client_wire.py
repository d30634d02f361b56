"""The load client's connection reading answers as the server's bytes arrive, in whatever pieces (no sockets: the
bytes are handed to the protocol as the event loop would)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from bench.load.client import Connection, Response

HEAD = (
    b"HTTP/1.1 200 OK\r\nServer: nginx\r\nX-Compute-Tokens: 7\r\nContent-Type: application/json\r\n"
    b"x-queue-time:  1.5\r\nX-Inference-Time:\t2\r\nContent-Length: 10\r\nConnection: keep-alive\r\n\r\n"
)
BODY = b"[[0.5]]\nx-"  # a body holding what looks like a header line: not one
EXPECTED = [(b"x-compute-tokens", b"7"), (b"x-queue-time", b"1.5"), (b"x-inference-time", b"2")]


class _Transport:
    def write(self, data: bytes) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


async def _answer(pieces: list[bytes]) -> Response:
    connection = Connection(asyncio.get_running_loop())
    connection.connection_made(_Transport())  # type: ignore[arg-type]  # the protocol only writes to it
    future = connection.send(b"POST / HTTP/1.1\r\n\r\n", deadline=1e18)
    for piece in pieces:
        connection.data_received(piece)
    return await future


def _cut(data: bytes, at: list[int]) -> list[bytes]:
    edges = [0, *at, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@pytest.mark.parametrize("cuts", [[], [20], [60, 61, 140], [len(HEAD) - 2], [len(HEAD) + 3], list(range(1, 200, 7))])
def test_x_headers_are_read_whatever_pieces_the_answer_arrives_in(cuts):
    """Names lower-cased, values without the whitespace around them, the other headers and the body left out."""
    response = asyncio.run(_answer(_cut(HEAD + BODY, cuts)))
    assert (response.status, response.body) == (200, BODY)
    assert list(response.headers) == EXPECTED


def test_answers_without_x_headers_carry_none_and_each_answer_its_own():
    async def two() -> tuple[Response, Response]:
        connection = Connection(asyncio.get_running_loop())
        connection.connection_made(_Transport())  # type: ignore[arg-type]
        first = connection.send(b"GET / HTTP/1.1\r\n\r\n", deadline=1e18)
        connection.data_received(HEAD + BODY)
        answered = await first
        second = connection.send(b"GET / HTTP/1.1\r\n\r\n", deadline=1e18)
        connection.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]")
        return answered, await second

    first, second = asyncio.run(two())
    assert list(first.headers) == EXPECTED and list(second.headers) == []


def test_x_headers_are_read_wherever_one_cut_falls():
    """Every place the answer may be cut in two, a header's name split over the pieces included (the connection
    looks at the head's raw pieces for "x-" instead of a callback a header)."""

    async def every_cut() -> list[int]:
        missed = []
        for at in range(1, len(HEAD + BODY)):
            response = await _answer(_cut(HEAD + BODY, [at]))
            if list(response.headers) != EXPECTED or response.body != BODY:
                missed.append(at)
        return missed

    assert asyncio.run(every_cut()) == []


def test_a_body_that_looks_like_an_x_header_adds_none():
    body = b'["x-", "\nX-"]'
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
    response = asyncio.run(_answer([head + body]))
    assert response.body == body and list(response.headers) == []
