"""identity's and doctor's --out, a folder or FILE.json, refused like every other command's: an earlier
run stays unless --overwrite, and even then a file ragbench did not write is never replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.results.store import read_results
from tests.harness.cli import run_cli

USER_FILE = '{"my": "config"}\n'


@pytest.fixture
def commands(tmp_path: Path):
    """Each command, given --out: identity is refused before any endpoint opens (no model loads); doctor
    probes a port where nothing listens (one finding, exit 1, in well under a second)."""
    texts = tmp_path / "texts.txt"
    texts.write_text("one text\nanother text\n")
    return {
        "identity": ["identity", "-e", "a=reference", "-e", "b=reference", "--texts", str(texts)],
        "doctor": ["doctor", "--tei", "http://127.0.0.1:9"],
    }


def one_line(code: int, err: str, *words: str) -> None:
    assert code == 2 and err.startswith("ragbench: error: ") and err.count("\n") == 1, err
    assert all(w in err for w in words), err


@pytest.mark.parametrize("command", ["identity", "doctor"])
def test_an_existing_json_file_is_refused_and_a_users_file_is_never_replaced(
    commands, command, tmp_path, monkeypatch, capsys
):
    mine = tmp_path / "config.json"
    mine.write_text(USER_FILE)
    code, _, err = run_cli([*commands[command], "--out", str(mine)], monkeypatch, capsys)
    # one rule for every file ragbench writes (issue 50): a user's file is said to be theirs at once, --overwrite or not
    one_line(code, err, f"--out {mine}: not a file ragbench wrote", "--overwrite replaces only")
    code, _, err = run_cli([*commands[command], "--out", str(mine), "--overwrite"], monkeypatch, capsys)
    one_line(code, err, "not a file ragbench wrote")
    assert mine.read_text() == USER_FILE


@pytest.mark.parametrize("command", ["identity", "doctor"])
def test_a_folder_with_an_earlier_run_is_refused_without_overwrite(commands, command, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    code, _, err = run_cli(["doctor", "--tei", "http://127.0.0.1:9", "--out", str(out)], monkeypatch, capsys)
    assert code == 1, err
    before = (out / "results.jsonl").read_bytes()
    code, _, err = run_cli([*commands[command], "--out", str(out)], monkeypatch, capsys)
    one_line(code, err, "holds an earlier run (results.jsonl)", "--overwrite")
    assert (out / "results.jsonl").read_bytes() == before


def test_overwrite_replaces_ragbench_files_only(tmp_path, monkeypatch, capsys):
    doctor = ["doctor", "--tei", "http://127.0.0.1:9"]
    out, document = tmp_path / "out", tmp_path / "doctor.json"
    for target in (out, document):
        assert run_cli([*doctor, "--out", str(target)], monkeypatch, capsys)[0] == 1
    (out / "notes.txt").write_text("mine")
    document.write_text(json.dumps({**json.loads(document.read_text()), "findings": []}))  # told apart from a new one
    for target in (out, document):
        code, _, err = run_cli([*doctor, "--out", str(target), "--overwrite"], monkeypatch, capsys)
        assert code == 1, err
    assert (out / "notes.txt").read_text() == "mine" and read_results(out / "results.jsonl").of("doctor_finding")
    assert json.loads(document.read_text())["findings"], "the earlier document was replaced by the new findings"
