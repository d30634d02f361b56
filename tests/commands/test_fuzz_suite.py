"""Fuzzing suite files and the target and endpoint spec parsers: any input ends in a result or in one
line and exit 2, never a traceback."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli.suite import GATE_KEYS, IDENTITY_KEYS, LOAD_KEYS, QUALITY_KEYS, SECTIONS, load_suite
from bench.core.errors import UserError
from bench.endpoints.spec import parse_endpoint_spec
from bench.targets.registry import parse_target_spec
from tests.harness.beir import write_beir
from tests.harness.cli import run_cli

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PARSER_FUZZ = settings(max_examples=300, deadline=None)  # parsers alone are fast: more examples

# Pieces of real specs, so that generated specs get deep into the parsers, not only their first check.
SPEC_PIECES = [
    "bm25",
    "dense",
    "hybrid",
    "openwebui",
    "lightrag",
    "tei",
    "tei-rerank",
    "openai",
    "cohere",
    "reference",
    ":",
    "weighted",
    "rrf",
    "+rerank",
    "@",
    "http://",
    "https://",
    "127.0.0.1",
    ":8080",
    "/v1",
    "?",
    "&",
    "=",
    "model",
    "key_env",
    "bm25_weight",
    "0.3",
    "batch",
    "prod",
    "%",
    "[",
    "]",
    "..",
    "\\",
    " ",
    "é",
    "\n",
]
specs = st.one_of(st.text(max_size=40), st.lists(st.sampled_from(SPEC_PIECES), max_size=12).map("".join))


@pytest.mark.parametrize("parse", [parse_target_spec, parse_endpoint_spec], ids=["target", "endpoint"])
@PARSER_FUZZ
@given(text=specs)
def test_specs_parse_or_say_one_line(parse, text):
    try:
        spec = parse(text)
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert spec.kind and spec.name


@pytest.mark.slow  # a fuzz run of many examples
@FUZZ
@given(text=specs)
def test_specs_on_the_command_line_exit_2_with_one_line(tmp_path_factory, monkeypatch, capsys, text):
    """Through the CLI: quality checks its targets before loading the dataset, identity its endpoints
    before the texts; a missing dataset/texts file keeps anything from running."""
    missing = tmp_path_factory.mktemp("fuzz") / "missing"
    for args in (
        ["quality", f"--dataset={missing}", f"--target={text}", f"--out={missing}"],
        ["identity", f"--endpoint={text}", f"--texts={missing}"],
    ):
        code, out, err = run_cli(args, monkeypatch, capsys)
        assert code == 2, (args, code, out, err)
        assert err.startswith("ragbench: error: ") and err.count("\n") == 1, err


# Suite files: real section names, real keys, values of every TOML type; sometimes raw text.
toml_values = st.one_of(
    st.integers(-3, 3000).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.booleans().map(lambda b: str(b).lower()),
    specs.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'),
    st.lists(st.integers(0, 64).map(str), max_size=3).map(lambda v: "[" + ", ".join(v) + "]"),
    st.lists(st.sampled_from(['"bm25"', '"ref"', '"x"', "1"]), max_size=3).map(lambda v: "[" + ", ".join(v) + "]"),
    st.sampled_from(
        ['{ "nDCG@10" = 0.01 }', '{ "R@100" = "2%" }', '{ a = "b" }', "{}", '"${HOME}"', '"${NOPE_UNSET}"']
    ),
)
KEYS = sorted(
    {*GATE_KEYS, *QUALITY_KEYS, *IDENTITY_KEYS, *LOAD_KEYS, "name", "path", "split", "bm25", "ref", "api_key"}
)
headers = st.sampled_from(
    [f"[{s}]" for s in SECTIONS]
    + [f"[[{s}]]" for s in ("quality", "identity", "load")]
    + ["[datasets.d]", "[targets]", "[endpoints]", "[bogus]", "[[gate]]"]
)
key_values = st.tuples(st.sampled_from(KEYS), toml_values).map(lambda kv: f"{kv[0]} = {kv[1]}")
VALID = """[gate]
alpha = 0.05
max_drop = { "nDCG@10" = 0.01 }
[datasets.d]
path = "data"
split = "test"
[targets]
bm25 = "bm25"
prod = "openwebui:hybrid@http://127.0.0.1:9"
[endpoints]
ref = "reference"
tei = "tei@http://127.0.0.1:9?key_env=TEI_KEY"
[[quality]]
dataset = "d"
targets = ["bm25"]
[[identity]]
endpoints = ["ref", "tei"]
dataset = "d"
[[load]]
endpoints = ["tei"]
batch = [1, 8]
concurrency = [1, 4]
""".splitlines()


@st.composite
def suites(draw) -> str:
    """A valid suite with a few lines replaced, dropped or added: most get past TOML into the checks."""
    lines = list(VALID)
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["value", "value", "drop", "insert", "header", "text"]))
        if action == "value" and at < len(lines) and "=" in lines[at]:
            lines[at] = lines[at].split("=", 1)[0] + "= " + draw(toml_values)
        elif action == "drop" and at < len(lines):
            del lines[at]
        elif action == "insert":
            lines.insert(at, draw(key_values))
        elif action == "header":
            lines.insert(at, draw(headers))
        elif action == "text":
            lines.insert(at, draw(st.text(max_size=20)))
    return "\n".join(lines)


@pytest.mark.slow  # a fuzz run of many examples
@FUZZ
@given(text=suites())
def test_suite_files_load_or_say_one_line(tmp_path_factory, monkeypatch, capsys, text):
    folder = tmp_path_factory.mktemp("fuzz")
    write_beir(folder / "data", {"d1": "cats"}, {"q1": "cats"}, [("q1", "d1", 1)])  # so that most get past the dataset
    path = folder / "suite.toml"
    path.write_text(text, encoding="utf-8")
    with contextlib.suppress(UserError):
        load_suite(path)
    # Through the CLI, with a baseline that does not exist: nothing runs; an error is one line.
    code, out, err = run_cli(
        ["run", str(path), "--out", str(folder / "out"), "--baseline", str(folder / "none")], monkeypatch, capsys
    )
    assert code == 2, (code, out, err)
    assert out == "" and err.startswith("ragbench: error: ") and err.count("\n") == 1, err


@FUZZ
@given(content=st.binary(max_size=200))
def test_suite_files_of_arbitrary_bytes(tmp_path_factory, monkeypatch, capsys, content):
    path = tmp_path_factory.mktemp("fuzz") / "suite.toml"
    path.write_bytes(content)
    code, out, err = run_cli(["run", str(path)], monkeypatch, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
