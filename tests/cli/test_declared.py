"""Each option of quality, identity, doctor, load, size and ceiling is declared once, on its request's field: the
command line's options and a suite entry's keys are that field, with its flag, bounds and type."""

from __future__ import annotations

import dataclasses

import pytest
import typer

from bench.cli import (  # noqa: F401  (each registers its command on `app`)
    ceiling_cmd,
    doctor_cmd,
    identity_cmd,
    load_cmd,
    quality_cmd,
    size_cmd,
)
from bench.cli.app import app
from bench.cli.suite import IDENTITY_KEYS, LOAD_KEYS, QUALITY_KEYS
from bench.commands.ceiling import CeilingRequest
from bench.commands.doctor import DoctorCommand
from bench.commands.identity import IdentityCommand
from bench.commands.load_request import LoadRequest
from bench.commands.options import declared_fields, flag_of
from bench.commands.quality import QualityRequest
from bench.commands.size import SizeRequest


def _options(command: str) -> dict[str, list[str]]:
    """`ragbench COMMAND`'s options: parameter name -> its flags."""
    params = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    return {p.name: sorted([*p.opts, *p.secondary_opts]) for p in params if p.name != "help"}


def _declared(request: type) -> dict[str, list[str]]:
    flags = {f.name: flag_of(f).names for f in declared_fields(request)}  # type: ignore[union-attr]
    return {name: sorted(n for both in names for n in both.split("/")) for name, names in flags.items()}  # --a/--no-a


@pytest.mark.parametrize(
    "command, request_type, own",
    [
        # the folder it writes: the command line's own choice; --label makes the request's `origin`
        ("quality", QualityRequest, {"out", "resume", "labels"}),
        ("identity", IdentityCommand, {"labels"}),
        ("doctor", DoctorCommand, {"labels"}),
        ("load", LoadRequest, {"out", "labels"}),
        ("size", SizeRequest, {"out", "labels"}),
        ("ceiling", CeilingRequest, {"out", "labels"}),
    ],
)
def test_the_command_line_options_are_the_declared_fields(command, request_type, own):
    options = _options(command)
    assert {k: v for k, v in options.items() if k not in own} == _declared(request_type)
    assert own <= set(options)


def test_the_suite_keys_are_the_declared_fields_a_suite_may_give():
    for keys, request in ((QUALITY_KEYS, QualityRequest), (IDENTITY_KEYS, IdentityCommand), (LOAD_KEYS, LoadRequest)):
        in_suite = {f.name for f in declared_fields(request) if flag_of(f).suite}  # type: ignore[union-attr]
        assert set(keys) == {"name", *in_suite}  # name: the entry's folder under --out
    # what the suite sets itself ([datasets] entries, `ragbench run --out/--overwrite`) is not a key
    assert not {"split", "max_queries", "max_docs", "overwrite", "out"} & set(QUALITY_KEYS)
    assert not {"out", "overwrite"} & set(IDENTITY_KEYS)
    assert not {"out", "overwrite", "ray", "origin"} & set(LOAD_KEYS)


def test_a_load_entry_takes_the_keys_it_took_before_they_were_declared():
    """The [[load]] keys, each with its TOML types, as a suite file has written them."""
    counts, text, path, number = (list, str, int), str, str, (float, int)
    before = {
        "name": str,
        "endpoints": list,
        "op": text,
        "batch": counts,
        "concurrency": counts,
        "rate": (list, str, int, float),
        "arrival": text,
        "max_inflight": int,
        "burst": int,
        "duration": text,
        "requests": int,
        "warmup": text,
        "workers": int,
        "texts": path,
        "dataset": path,
        "lengths": counts,
        "documents": counts,
        "tokenizer": path,
        "timeout": text,
        "seed": int,
        "max_error_rate": number,
        "repeat": int,
        "requests_csv": path,
    }
    interleave = {"interleave": bool, "rounds": int, "window": text}  # added with `load --interleave` (issue 36)
    interleave["slice"] = text  # `load --interleave --slice`
    assert {**before, **interleave} == LOAD_KEYS


def test_a_declared_bound_holds_on_the_command_line_and_in_a_suite(tmp_path, monkeypatch, capsys):
    from tests.harness.cli import run_cli

    limit = next(f for f in dataclasses.fields(IdentityCommand) if f.name == "limit")
    assert flag_of(limit).min == 1  # type: ignore[union-attr]
    texts = tmp_path / "texts.txt"
    texts.write_text("one\n")
    suite = tmp_path / "suite.toml"
    suite.write_text(f'[endpoints]\nref = "reference"\n[[identity]]\ntexts = "{texts}"\nlimit = 0\n')
    code, _, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 2 and err.startswith(f"ragbench: error: {suite}:5: identity #1.limit = 0: "), err
    args = ["identity", "-e", "a=reference", "--texts", str(texts), "--limit", "0"]
    code, _, err = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "'--limit': Input should be greater than or equal to 1" in err
