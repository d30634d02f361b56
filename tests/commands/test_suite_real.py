"""A suite of every kind against a real server (infinity-emb, as the suite's conftest starts it): quality
with a local engine, identity of infinity against the in-process reference (the same MiniLM), and a load
sweep; run twice, the second gated against the first."""

from __future__ import annotations

import json

import pytest

from tests.commands.helpers import scifact_quality
from tests.harness.cli import run_cli

pytestmark = pytest.mark.integration

SUITE_REST = """
[endpoints]
ref = "reference"
inf = "openai@${RAGBENCH_TEST_INFINITY}?model=${RAGBENCH_TEST_INFINITY_MODEL}"

[[identity]]
endpoints = ["ref", "inf"]
reference = "ref"
dataset = "scifact"
limit = 40

[[load]]
endpoints = ["inf"]
batch = [8]
concurrency = [2]
lengths = [16]
duration = "1s"
warmup = "0.5s"
timeout = "20s"
"""


def test_a_suite_of_every_kind_against_infinity(infinity_server, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("RAGBENCH_TEST_INFINITY", infinity_server.url)
    monkeypatch.setenv("RAGBENCH_TEST_INFINITY_MODEL", infinity_server.embed_model)
    suite = tmp_path / "suite.toml"
    suite.write_text(scifact_quality(max_queries=40, max_docs=200, max_drop=0.01) + SUITE_REST)
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "base")], monkeypatch, capsys)
    assert code == 0, out + err
    assert {p.name for p in (tmp_path / "base").iterdir()} == {"quality-scifact", "identity", "load"}
    code, out, err = run_cli(
        [
            "run",
            str(suite),
            "--out",
            str(tmp_path / "cur"),
            "--baseline",
            str(tmp_path / "base"),
            "--summary",
            str(tmp_path / "summary.md"),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, out + err
    code, report, err = run_cli(
        ["compare", str(tmp_path / "base"), str(tmp_path / "cur"), "--format", "json"], monkeypatch, capsys
    )
    checks = json.loads(report)["checks"]
    kinds = {c["kind"] for c in checks}
    assert kinds == {"quality", "identity", "load"}, checks
    pair = next(c for c in checks if c["kind"] == "identity" and c["name"].startswith("embed"))
    assert pair["status"] == "pass" and pair["figures"]["current_verdict"] == "pass"  # the same MiniLM both sides
    quality = next(c for c in checks if c["kind"] == "quality")
    assert quality["figures"]["effect"] == 0 and quality["figures"]["p"] == 1.0  # the same bm25 on the same sample
    load = next(c for c in checks if c["kind"] == "load")
    assert load["status"] == "info" and load["figures"]["current_texts_per_s"] > 0  # no load thresholds: reported
    assert "### quality" in (tmp_path / "summary.md").read_text()
