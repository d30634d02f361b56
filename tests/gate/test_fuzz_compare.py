"""Fuzzing compare's inputs: whatever the files and flags hold, `ragbench compare` ends with exit 0, 1 or 2,
and a 2 is exactly one line on stderr, never a traceback (an exception would escape `run_cli`)."""

from __future__ import annotations

import json
import types
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.results.schema import RECORD_TYPES, SCHEMA, VERSION
from tests.gate.helpers import noisy_scores, write_results
from tests.harness.cli import run_cli

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _typed(hint) -> st.SearchStrategy:
    """Values of a field's type, mostly: the records then get past the reader and reach compare's logic."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*[_typed(a) for a in args])
    simple = {
        str: st.text(alphabet="prodq01ndcg_", max_size=6),
        int: st.integers(-2, 2000),
        float: st.floats(allow_nan=False) | st.none(),
        bool: st.booleans(),
        type(None): st.none(),
    }
    if hint in simple:
        return simple[hint]
    if origin is dict:
        return st.dictionaries(
            st.sampled_from(
                ["q0000", "q0001", "p50", "p99", "service", "scheduled", "texts_per_s", "errors", "saturated", "x"]
            ),
            _typed(args[1]),
            max_size=4,
        )
    if origin is list:
        return st.lists(_typed(args[0]), max_size=3)
    return json_values


@st.composite
def records(draw):
    """A record of a known kind: its real fields (some dropped) with values of their types, or now and
    then anything at all."""
    kind = draw(st.sampled_from(sorted(RECORD_TYPES)))
    record = {"record": kind}
    for name, hint in typing.get_type_hints(RECORD_TYPES[kind]).items():
        if name == "record" or draw(st.integers(0, 9)) == 0:
            continue
        record[name] = draw(json_values if draw(st.integers(0, 9)) == 0 else _typed(hint))
    return record


@st.composite
def results_files(draw) -> str:
    header = {
        "record": "run",
        "schema": SCHEMA,
        "version": VERSION,
        "command": "quality",
        "created": "x",
        "ragbench_version": "x",
        "dataset": {"fingerprint": "f"},
        "measures": ["ndcg_cut_10"],
        "measure_labels": {"ndcg_cut_10": "nDCG@10"},
        "depth": 10,
        "seed": 0,
        "targets": ["prod"],
    }
    for key in draw(st.lists(st.sampled_from(sorted(header)), max_size=2)):
        header[key] = draw(
            json_values if draw(st.booleans()) else _typed(typing.get_type_hints(RECORD_TYPES["run"])[key])
        )
    metric = {
        "record": "metrics",
        "target": "prod",
        "measure": "ndcg_cut_10",
        "label": "nDCG@10",
        "mean": 0.5,
        "ci_low": 0.4,
        "ci_high": 0.6,
        "queries": 3,
        "per_query": draw(
            st.dictionaries(
                st.sampled_from(["q0000", "q0001", "x"]),
                st.floats(allow_nan=False) | st.none() | st.floats(allow_nan=False) | json_values,
                max_size=3,
            )
        ),
    }
    lines = [header, metric, *draw(st.lists(records(), max_size=4))]
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    if draw(st.integers(0, 3)) == 0:  # and some lines broken or cut
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(max_size=10)) + text[cut:]
    return text


def _assert_clean(code: int, out: str, err: str) -> None:
    assert code in (0, 1, 2), (code, out, err)
    if code == 2:
        assert out == "" and err.startswith("ragbench: error: ") and err.count("\n") == 1, err


@pytest.mark.slow  # a fuzz run of many examples
@FUZZ
@given(content=st.binary(max_size=300))
def test_arbitrary_bytes_as_a_results_file(tmp_path_factory, monkeypatch, capsys, content):
    folder = tmp_path_factory.mktemp("fuzz")
    good = write_results(folder / "good", {"prod": {"ndcg_cut_10": noisy_scores(5, 1)}})
    (folder / "bad.jsonl").write_bytes(content)
    _assert_clean(*run_cli(["compare", str(good), str(folder / "bad.jsonl")], monkeypatch, capsys))
    _assert_clean(*run_cli(["compare", str(folder / "bad.jsonl"), str(good)], monkeypatch, capsys))


@pytest.mark.slow  # a fuzz run of many examples
@FUZZ
@given(text=results_files())
def test_results_files_with_wrong_fields_and_records(tmp_path_factory, monkeypatch, capsys, text):
    folder = tmp_path_factory.mktemp("fuzz")
    good = write_results(folder / "good", {"prod": {"ndcg_cut_10": {"q0000": 0.1, "q0001": 0.9, "q0002": 0.5}}})
    (folder / "bad.jsonl").write_text(text, encoding="utf-8")
    _assert_clean(
        *run_cli(
            [
                "compare",
                str(good),
                str(folder / "bad.jsonl"),
                "--benchmark-json",
                str(folder / "b.json"),
                "--junit",
                str(folder / "j.xml"),
                "--min-throughput-ratio",
                "0.9",
            ],
            monkeypatch,
            capsys,
        )
    )
    _assert_clean(
        *run_cli(["compare", str(folder / "bad.jsonl"), str(good), "--max-p99-increase", "5%"], monkeypatch, capsys)
    )


flag_values = st.text(max_size=12)


@pytest.mark.slow  # a fuzz run of many examples
@FUZZ
@given(
    flags=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "--max-drop",
                    "--primary",
                    "--alpha",
                    "--match",
                    "--max-p99-increase",
                    "--min-throughput-ratio",
                    "--max-error-rate-increase",
                    "--format",
                ]
            ),
            flag_values,
        ),
        max_size=3,
    )
)
def test_arbitrary_flag_values(tmp_path_factory, monkeypatch, capsys, flags):
    folder = tmp_path_factory.mktemp("fuzz")
    scores = {"prod": {"ndcg_cut_10": noisy_scores(5, 1)}}
    base, cur = write_results(folder / "b", scores), write_results(folder / "c", scores)
    args = ["compare", str(base), str(cur)] + [f"{flag}={value}" for flag, value in flags]
    _assert_clean(*run_cli(args, monkeypatch, capsys))
