"""Too little data to judge is its own verdict: a neighbour check over ten texts cannot fail, so it is no pass.
(With enough texts the same pair passes: test_identity.py::test_cli_passes_with_exit_0.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.cli import run_cli
from tests.paths import scifact


def _texts(tmp_path: Path, n: int) -> Path:
    lines = (scifact() / "corpus.jsonl").read_text().splitlines()[:n]
    path = tmp_path / f"texts{n}.jsonl"
    path.write_text("".join(json.dumps(json.loads(line)["text"][:300]) + "\n" for line in lines))
    return path


@pytest.mark.slow
def test_too_few_texts_for_the_neighbour_check_is_insufficient_data_not_a_pass(tmp_path, monkeypatch, capsys):
    report = tmp_path / "identity.json"
    code, out, _ = run_cli(
        [
            "identity",
            "-e",
            "a=reference",
            "-e",
            "b=reference",
            "--texts",
            str(_texts(tmp_path, 8)),
            "--out",
            str(report),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 1, out
    assert "verdict: INSUFFICIENT DATA" in out
    assert (
        "insufficient data: top-10 neighbour overlap: 7 candidate texts per query, the check needs at least 20" in out
    )
    document = json.loads(report.read_text())
    [pair] = document["embed_pairs"]
    assert (document["verdict"], pair["verdict"]) == ("insufficient data", "insufficient data")
    assert (pair["top10_overlap"], pair["failures"]) == (None, [])
