"""An endpoint spec's option values are typed and checked when the spec is parsed (issue 37): a value the endpoint
would refuse is one line and exit 2 before the dataset is loaded or any endpoint is built."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.endpoints.options import CohereOptions, OpenAIOptions, ReferenceOptions, TeiOptions
from bench.endpoints.spec import parse_endpoint_spec
from tests.harness.cli import run_cli


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("E=tei@http://h:1?normalize=maybe&dimensions=abc", "option normalize='maybe' is not a boolean"),
        ("E=tei@http://h:1?dimensions=abc", "option dimensions='abc' is not a positive integer"),
        ("E=tei@http://h:1?dimensions=0", "option dimensions='0' is not a positive integer"),
        ("E=tei@http://h:1?truncation_direction=up", "option truncation_direction='up' is not left or right"),
        ("E=openai@http://h:1?model=m&encoding=xml", "option encoding='xml' is not float, base64 or none"),
        ("E=cohere@http://h:1?raw_scores=perhaps", "option raw_scores='perhaps' is not a boolean"),
        ("E=reference?cache=sometimes", "option cache='sometimes' is not a boolean"),
    ],
)
def test_a_bad_option_value_is_refused_by_the_parse(spec, said):
    with pytest.raises(UserError) as info:
        parse_endpoint_spec(spec)
    assert str(info.value).startswith("endpoint E: ") and said in str(info.value) and "\n" not in str(info.value)


def test_the_parse_gives_each_kind_its_typed_options():
    tei = parse_endpoint_spec("E=tei@http://h:1?normalize=off&dimensions=64&truncation_direction=Left&timeout=5s")
    assert tei.options == TeiOptions(normalize=False, dimensions=64, truncation_direction="left", timeout_s=5.0)
    openai = parse_endpoint_spec("O=openai@http://h:1?model=m&encoding=none&batch=8")
    assert openai.options == OpenAIOptions(model="m", encoding=None, batch=8)
    assert parse_endpoint_spec("C=cohere@http://h:1?model=r").options == CohereOptions(model="r")
    assert parse_endpoint_spec("R=reference").options == ReferenceOptions()


def test_quality_refuses_a_bad_endpoint_option_before_the_dataset_loads(tmp_path, monkeypatch, capsys):
    import bench.commands.quality as quality

    def never(*args, **kwargs):
        raise AssertionError("the dataset was loaded before the endpoint spec was checked")

    monkeypatch.setattr(quality, "load_dataset", never)
    out = tmp_path / "out"
    args = ["quality", "--dataset", str(tmp_path / "absent"), "-e", "E=tei@http://127.0.0.1:9?normalize=maybe"]
    code, _, stderr = run_cli([*args, "-t", "dense?embedder=E", "--out", str(out)], monkeypatch, capsys)
    assert code == 2 and "option normalize='maybe' is not a boolean" in stderr
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()
