"""Target specs and endpoint specs share one option grammar: the same boolean words, the same
key=value rule, a name given twice refused (not silently the last one)."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.core.spec_grammar import BOOLEAN_WORDS, parse_options
from bench.endpoints.spec import open_endpoint, parse_endpoint_spec
from bench.targets.registry import TargetOptions, build_target, parse_target_spec


@pytest.mark.parametrize(("word", "value"), sorted(BOOLEAN_WORDS.items()))
def test_every_boolean_word_means_the_same_for_targets_and_endpoints(word, value, monkeypatch):
    monkeypatch.delenv("LIGHTRAG_API_KEY", raising=False)
    for spelled in (word, word.upper()):
        endpoint = open_endpoint(parse_endpoint_spec(f"x=tei@http://127.0.0.1:9?normalize={spelled}"))
        target = build_target(parse_target_spec(f"lightrag@http://127.0.0.1:9?cleanup={spelled}"), TargetOptions())
        try:
            assert endpoint.wire.options["normalize"] is value
            assert target.cleanup is value
        finally:
            endpoint.close()
            target.close()


@pytest.mark.parametrize(
    "spec", ["x=tei@http://127.0.0.1:9?normalize=maybe", "lightrag@http://127.0.0.1:9?cleanup=maybe"]
)
def test_a_word_that_is_not_boolean_lists_the_words(spec):
    with pytest.raises(UserError) as info:
        if spec.startswith("x="):
            open_endpoint(parse_endpoint_spec(spec))
        else:
            build_target(parse_target_spec(spec), TargetOptions())
    assert "'maybe' is not a boolean (true/false, yes/no, on/off or 1/0)" in str(info.value)


@pytest.mark.parametrize(
    "parse",
    [
        lambda q: parse_endpoint_spec(f"x=tei@http://127.0.0.1:9?{q}"),
        lambda q: parse_target_spec(f"lightrag@http://127.0.0.1:9?{q}"),
    ],
)
@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ("normalize=on&normalize=off", "option 'normalize' given twice"),
        ("normalize", "option 'normalize' is not option=value"),
        ("=on", "option '=on' is not option=value"),
    ],
)
def test_one_option_rule_for_targets_and_endpoints(parse, query, needle):
    with pytest.raises(UserError) as info:
        parse(query)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_an_option_name_that_is_not_printable_is_refused_in_one_line():
    """A decoded `%0A` (or a raw newline) in a name: named by its repr, never printed raw into the error (the suite
    fuzz found `openwebui?a\\nb=1` giving a two-line 'unknown parameter(s)' error)."""
    for query in ("a%0Ab=1", "a\nb=1", "x=1&%09=2"):
        with pytest.raises(UserError) as raised:
            parse_options(query, "target 't'")
        assert "\n" not in str(raised.value) and "not printable" in str(raised.value)
