"""A user error is one line on stderr whatever it quotes (bench/cli/__init__.py)."""

from __future__ import annotations

from tests.harness.cli import run_cli


def test_a_path_with_a_line_break_is_quoted_escaped_on_one_line(tmp_path, monkeypatch, capsys):
    missing = tmp_path / "corpus\nqueries"
    code, stdout, stderr = run_cli(["datasets", "check", str(missing)], monkeypatch, capsys)
    assert code == 2
    assert stdout == ""
    assert stderr.startswith("ragbench: error: ") and stderr.count("\n") == 1
    assert "corpus\\nqueries" in stderr
