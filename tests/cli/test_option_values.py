"""Bad option and path values: one accurate line `ragbench: error: ...` and exit code 2, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli import run_cli
from tests.paths import scifact


def one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragbench: error: "), err
    return lines[0]


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    path = tmp_path / "texts.txt"
    path.write_text("one\ntwo\n")
    return path


OUT_OF_RANGE = [
    (["quality", "--max-queries", "0"], "'--max-queries': Input should be greater than or equal to 1"),
    (["quality", "--max-queries", "-1"], "'--max-queries': Input should be greater than or equal to 1"),
    (["quality", "--seed", "-1"], "'--seed': Input should be greater than or equal to 0"),
    (["quality", "--max-docs", "-5"], "'--max-docs': Input should be greater than or equal to 1"),
    (["demo", "--max-docs", "-5"], "'--max-docs': Input should be greater than or equal to 0"),
    (["identity", "-e", "a=reference", "--limit", "0"], "'--limit': Input should be greater than or equal to 1"),
    (["identity", "-e", "a=reference", "--limit", "-1"], "'--limit': Input should be greater than or equal to 1"),
    (
        ["meter", "--upstream", "llm=http://127.0.0.1:9", "--port", "70000"],
        "'--port': Input should be less than or equal to 65535",
    ),
]


@pytest.mark.parametrize("args, words", OUT_OF_RANGE)
def test_out_of_range_values_are_one_line_before_any_work(tmp_path, texts, monkeypatch, capsys, args, words):
    out = tmp_path / "out"
    extra = {
        "quality": ["--dataset", str(scifact()), "-t", "bm25", "--out", str(out)],
        "demo": ["--out", str(out)],
        "identity": ["--texts", str(texts)],
        "meter": [],
    }[args[0]]
    line = one_error_line(*run_cli([*args, *extra], monkeypatch, capsys)[::2])
    assert line == f"ragbench: error: Invalid value for {words} (see 'ragbench {args[0]} --help')"
    assert not out.exists()


def test_usage_errors_are_one_line_and_help_still_works(monkeypatch, capsys):
    line = one_error_line(*run_cli(["quality", "-t", "bm25"], monkeypatch, capsys)[::2])
    assert line == "ragbench: error: Missing option '--dataset' (see 'ragbench quality --help')"
    line = one_error_line(*run_cli(["evaluate", "--nope"], monkeypatch, capsys)[::2])
    assert line == "ragbench: error: No such option: --nope (see 'ragbench evaluate --help')"
    one_error_line(*run_cli(["no-such-command"], monkeypatch, capsys)[::2])
    code, out, err = run_cli(["quality", "--help"], monkeypatch, capsys)
    assert code == 0 and "--max-queries" in out and err == ""
    code, out, _ = run_cli([], monkeypatch, capsys)
    assert code == 2 and "Usage" in out


def test_a_measure_with_a_zero_cutoff_stops_quality_before_it_writes(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    line = one_error_line(
        *run_cli(
            ["quality", "--dataset", str(scifact()), "--split", "train", "-t", "bm25", "--out", str(out), "-m", "P.0"],
            monkeypatch,
            capsys,
        )[::2]
    )
    assert line == "ragbench: error: measure 'P.0': the cut-off must be from 1 to 1,000,000"
    assert not out.exists()


def test_folders_and_unreadable_files_are_named_for_what_they_are(tmp_path, texts, monkeypatch, capsys):
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n")
    line = one_error_line(*run_cli(["evaluate", str(qrels), str(tmp_path)], monkeypatch, capsys)[::2])
    assert line == f"ragbench: error: {tmp_path}: is a folder, expected a run file"
    line = one_error_line(*run_cli(["evaluate", "/proc/self/mem", str(texts)], monkeypatch, capsys)[::2])
    assert line == "ragbench: error: /proc/self/mem: cannot read: Input/output error"
    line = one_error_line(
        *run_cli(["identity", "-e", "a=reference", "-e", "b=reference", "--texts", str(tmp_path)], monkeypatch, capsys)[
            ::2
        ]
    )
    assert line == f"ragbench: error: {tmp_path}: is a folder, expected a texts file"


def test_an_unusable_embedding_cache_is_one_line(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("RAGBENCH_CACHE", str(blocker))
    code, _, err = run_cli(
        [
            "quality",
            "--dataset",
            str(scifact()),
            "--split",
            "train",
            "-t",
            "dense",
            "--max-queries",
            "2",
            "--max-docs",
            "20",
            "--out",
            str(tmp_path / "out"),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (
        f"ragbench: error: embedding cache {blocker / 'embeddings'}: unusable (Not a directory); "
        "set RAGBENCH_CACHE to a writable folder, or move that file away"
    )
    corrupt = tmp_path / "corrupt"
    (corrupt / "embeddings").mkdir(parents=True)
    monkeypatch.setenv("RAGBENCH_CACHE", str(corrupt))
    from bench.endpoints.reference import SentenceTransformerEmbedder, model_fingerprint, resolve_model

    (corrupt / "embeddings" / f"st-{model_fingerprint(resolve_model(None))}.sqlite").write_bytes(b"not sqlite" * 500)
    with pytest.raises(Exception, match="file is not a database"):
        SentenceTransformerEmbedder()
