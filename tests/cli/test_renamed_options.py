"""A renamed option keeps its old spelling for one release (bench/core/flags.py `Renamed`): the old flag and the
old suite key still work, exactly as before, with one deprecation line on stderr.

`compare --max-error-rate` bounded the rise of a load point's error rate between runs, while `load` and `size`'s
`--max-error-rate` is a point's own limit: compare's is now `--max-error-rate-increase`."""

from __future__ import annotations

import pytest

from bench.cli.suite import load_suite
from bench.core.errors import InputError
from tests.cli.test_shared_options import _options
from tests.gate.helpers import load_point, write_load_results
from tests.harness.cli import run_cli

DEPRECATED = (
    "--max-error-rate is now --max-error-rate-increase (it bounds the rise of a load point's error rate between "
    "runs); the old name goes in the next release"
)


@pytest.fixture
def runs(tmp_path):
    """A baseline and a current load run whose error rate rose from 0 to 56% (452 timeouts of 801)."""
    base = write_load_results(tmp_path / "base", [load_point(sent=800)])
    cur = write_load_results(tmp_path / "cur", [load_point(sent=801, errors={"timeout": 452}, texts_per_s=990)])
    return str(base), str(cur)


def test_compare_takes_the_rise_of_the_error_rate_by_its_new_name(runs, monkeypatch, capsys):
    assert run_cli(["compare", *runs], monkeypatch, capsys)[0] == 1  # any rise fails by default
    code, out, err = run_cli(["compare", *runs, "--max-error-rate-increase", "60%"], monkeypatch, capsys)
    assert code == 0, out + err
    assert "is now" not in err
    code, out, _ = run_cli(["compare", *runs, "--max-error-rate-increase", "50%"], monkeypatch, capsys)
    assert code == 1 and "max error-rate rise 50.00%" in out


def test_compare_still_takes_the_old_name_with_one_deprecation_line(runs, monkeypatch, capsys):
    code, out, err = run_cli(["compare", *runs, "--max-error-rate", "60%"], monkeypatch, capsys)
    assert code == 0, out + err
    assert err.count(DEPRECATED) == 1 and err.count("\n") == 1, err
    code, out, err = run_cli(["compare", *runs, "--max-error-rate", "50%"], monkeypatch, capsys)
    assert code == 1 and "max error-rate rise 50.00%" in out and err.count(DEPRECATED) == 1


def test_compare_refuses_both_spellings_at_once(runs, monkeypatch, capsys):
    args = ["compare", *runs, "--max-error-rate", "60%", "--max-error-rate-increase", "60%"]
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "--max-error-rate-increase and --max-error-rate: give one of them" in err


def test_the_old_name_is_hidden_from_help():
    options = _options("compare")
    assert not options["--max-error-rate-increase"].hidden and options["--max-error-rate"].hidden


def _suite(tmp_path, gate: str):
    texts = tmp_path / "texts.txt"
    texts.write_text("one\n")
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'[gate]\n{gate}\n[endpoints]\na = "reference"\nb = "reference"\n[[identity]]\ntexts = "{texts}"\n'
    )
    return suite


def test_a_suite_gives_the_rise_by_its_new_key(tmp_path, capsys):
    suite = load_suite(_suite(tmp_path, 'max_error_rate_increase = "60%"'))
    assert suite.gate.max_error_rate == pytest.approx(0.6)
    assert capsys.readouterr().err == ""


def test_a_suite_still_gives_it_by_its_old_key_with_one_deprecation_line(tmp_path, capsys):
    path = _suite(tmp_path, 'max_error_rate = "60%"')
    suite = load_suite(path)
    assert suite.gate.max_error_rate == pytest.approx(0.6)
    err = capsys.readouterr().err
    line = (
        f"{path}:2: gate.max_error_rate is now gate.max_error_rate_increase (it bounds the rise of a load point's "
        "error rate between runs); the old name goes in the next release\n"
    )
    assert err == line
    assert load_suite(_suite(tmp_path, "max_error_rate = 0.25")).gate.max_error_rate == pytest.approx(0.25)


def test_a_suite_refuses_both_keys_and_checks_the_old_one_as_before(tmp_path):
    with pytest.raises(InputError, match="give max_error_rate_increase or max_error_rate, not both"):
        load_suite(_suite(tmp_path, "max_error_rate = 0.1\nmax_error_rate_increase = 0.1"))
    # a value it refuses is named as the file spells it, at its line, as before the rename
    with pytest.raises(InputError, match=r"suite.toml:2: gate.max_error_rate: max_error_rate '150%': .*at most 1"):
        load_suite(_suite(tmp_path, 'max_error_rate = "150%"'))
