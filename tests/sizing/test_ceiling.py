"""`ragbench ceiling`: the FLOP count against torch's own counter, the peak table, a real CPU run, bad input."""

from __future__ import annotations

import json

import pytest

from bench.results.store import read_results
from bench.sizing.ceiling import device_peak, model_shape
from tests.harness.cli import run_cli
from tests.harness.models import minilm_path


@pytest.mark.slow
def test_flops_per_token_agree_with_torch_flop_counter():
    """The config.json formula against torch.utils.flop_counter on the real MiniLM forward pass."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModel

    path = minilm_path()
    model = AutoModel.from_pretrained(str(path), attn_implementation="eager").eval()
    for seq in (16, 128, 256):
        ids = torch.randint(1000, 2000, (2, seq))
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(input_ids=ids, attention_mask=torch.ones_like(ids))
        counted = counter.get_total_flops() / (2 * seq)
        # the pooler's one h x h product on the first token is the only matmul the formula leaves out
        pooler = 2 * 384 * 384 / seq
        assert model_shape(path).flops_per_token(seq) == pytest.approx(counted - pooler, rel=1e-9), seq


def test_peak_table():
    assert device_peak("NVIDIA H200", "bfloat16") == (989.5, "NVIDIA data sheet, H200 bfloat16 dense")
    assert device_peak("NVIDIA H200 NVL", "float16")[0] == 835.5
    assert device_peak("NVIDIA H100 PCIe", "float32")[0] == 51.0
    assert device_peak("NVIDIA A100-SXM4-80GB", "float32", tf32=True)[0] == 156.0
    assert device_peak("NVIDIA L4", "float16")[0] == 121.0
    assert device_peak("Tesla T4", "bfloat16") == (None, None)  # no bfloat16 on a T4
    assert device_peak("AMD EPYC", "float32") == (None, None)


@pytest.mark.slow
def test_cpu_run_writes_points_and_a_report(tmp_path, monkeypatch, capsys):
    out = tmp_path / "ceiling"
    code, stdout, stderr = run_cli(
        ["ceiling", "--batch", "1,4", "--lengths", "16", "--seconds", "0.3", "--out", str(out)], monkeypatch, capsys
    )
    assert code == 0, stderr
    results = read_results(out / "results.jsonl")
    assert results.header.command == "ceiling" and results.end.status == "complete"
    assert [(c.length, c.batch) for c in results.ceiling] == [(16, 1), (16, 4)]
    for c in results.ceiling:
        assert c.op == "embed" and c.device == "cpu" and c.dtype == "float32" and c.max_seq_length == 256
        assert 12 <= c.tokens_per_text <= 16  # load's cuts: at most 16 tokens, special tokens included
        assert c.texts >= 64 and c.seconds >= 0.3
        assert c.texts_per_s == pytest.approx(c.texts / c.seconds)
        assert c.achieved_tflops == pytest.approx(c.token_flops * c.tokens_per_s / 1e12)
        assert c.peak_tflops is None and c.peak_fraction is None
    assert "give --peak-tflops" in stdout
    assert "| 16 |" in (out / "report.md").read_text()

    code, stdout, _ = run_cli(
        [
            "ceiling",
            "--batch",
            "2",
            "--lengths",
            "16",
            "--seconds",
            "0.2",
            "--peak-tflops",
            "2",
            "--out",
            str(tmp_path / "with-peak"),
        ],
        monkeypatch,
        capsys,
    )
    (point,) = read_results(tmp_path / "with-peak" / "results.jsonl").ceiling
    assert point.peak_source == "--peak-tflops" and point.peak_fraction == pytest.approx(point.achieved_tflops / 2)


def test_bad_input_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    no_layers = tmp_path / "no-layers"
    no_layers.mkdir()
    (no_layers / "config.json").write_text(json.dumps({"hidden_size": 8}))
    cases = [
        (["--dtype", "float8"], "--dtype 'float8'"),
        (["--device", "tpu"], "--device 'tpu'"),
        (["--batch", "0"], "--batch '0'"),
        (["--lengths", "2"], "--lengths 2: a text needs more than 2 tokens"),
        (["--peak-tflops", "-3"], "--peak-tflops -3.0"),
        (["--model", str(tmp_path / "missing")], "not a local directory"),
        (["--model", str(empty)], "config.json: not found"),
        (["--model", str(no_layers)], "not an encoder config"),
        (["--device", "cuda"], "no CUDA device"),
    ]
    for args, message in cases:
        out = tmp_path / "out"
        code, _, stderr = run_cli(["ceiling", *args, "--out", str(out)], monkeypatch, capsys)
        assert code == 2, (args, stderr)
        assert stderr.count("\n") == 1 and message in stderr, (args, stderr)
        assert not out.exists(), args
