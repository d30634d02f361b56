"""`identity --max-time`: one overall deadline for every request of the comparison (issue 50: a TEI trickling a byte
every 0.5 s held two texts past 120 s, each request within its own timeout)."""

from __future__ import annotations

import pytest

from bench.commands.identity import IdentityCommand, check_identity
from bench.core.errors import UserError
from bench.core.http import HttpClient
from bench.core.http.deadline import overall_deadline
from tests.harness.stubs import JsonStub, Trickle

# The trickled answer would take BYTES * EVERY_S = 20 s, within the request's own OWN_TIMEOUT_S: only the overall
# deadline (a fraction of it) can end it, whatever the runner's load.
BYTES, EVERY_S, OWN_TIMEOUT_S, OVERALL_S = 100, 0.2, 60.0, 1.0


def test_the_overall_deadline_ends_a_request_its_own_timeout_would_let_run():
    stub = JsonStub({("GET", "/info"): (200, Trickle(b'{"ok": 1}'.ljust(BYTES), EVERY_S))})
    client = HttpClient("TEI at stub", stub.url, timeout_s=OWN_TIMEOUT_S)
    try:
        with overall_deadline(OVERALL_S), pytest.raises(UserError, match="no complete answer"):
            client.json("GET", "/info")
    finally:
        client.close()
        stub.stop()


def test_identity_max_time_is_checked_with_every_option(tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("a\nb\n")
    command = IdentityCommand(endpoints=["a=tei@http://h:1", "b=tei@http://h:2"], texts=texts, max_time="0s")
    with pytest.raises(UserError, match="--max-time"):
        check_identity(command)
