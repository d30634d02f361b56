"""--interleave's own options given without it, or --rounds beside --max-time: refused in one line, never ignored
(issue 50's hostile pass: `load --too-busy fail` and `load --rounds 5 --window 9s` ran a plain sweep, exit 0;
`load --interleave --rounds 3 --max-time 30s` ran on the budget, --rounds unsaid, exit 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.commands.load import sweep_of
from bench.commands.load_request import LoadRequest
from bench.core.errors import UserError

ENDPOINTS = ["A=tei@http://127.0.0.1:9", "B=tei@http://127.0.0.1:10"]


@pytest.mark.parametrize(
    ("given", "flag"),
    [({"too_busy": "fail"}, "--too-busy"), ({"rounds": 5}, "--rounds"), ({"window": "9s"}, "--window")],
)
def test_an_interleave_option_without_interleave_is_refused(tmp_path: Path, given: dict, flag: str):
    with pytest.raises(UserError, match=f"{flag}.*--interleave"):
        sweep_of(LoadRequest(ENDPOINTS[:1], tmp_path, **given), False)


def test_rounds_beside_max_time_is_refused(tmp_path: Path):
    request = LoadRequest(ENDPOINTS, tmp_path, interleave=True, rounds=3, max_time="30s")
    with pytest.raises(UserError, match="--rounds or --max-time"):
        sweep_of(request, False)


def test_the_defaults_pass(tmp_path: Path):
    sweep_of(LoadRequest(ENDPOINTS[:1], tmp_path), False)
    sweep_of(LoadRequest(ENDPOINTS, tmp_path, interleave=True, max_time="30s"), False)
