"""The results writer masks a typed record's fields by value, and whole only where a field is marked secret: a
field named like a secret (`flops_per_token`, `token`) keeps its figure; dicts no schema declares (headers,
params) are still masked by key name. A line read back is masked by the same rules."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from bench.core.secrets import MASK, SECRET, VERBATIM, mask_fields, register_secret
from bench.results.writer import record_line

PLANTED = "plantedsecret-6d1e0b"


@dataclass
class Block:
    api_key: str = field(metadata=SECRET)
    flops_per_token: float = 0.0


@dataclass
class Record:
    flops_per_token: float  # named like a secret, not marked: a figure
    token: str  # named like a secret, not marked: masked by value only
    password: str = field(metadata=SECRET)
    headers: dict[str, str] = field(default_factory=dict)  # free-form: masked by key name too
    blocks: list[Block] = field(default_factory=list)
    by_name: dict[str, Block] = field(default_factory=dict)
    encoded: str = field(default="", metadata=VERBATIM)
    record: str = "test"


def test_only_marked_fields_are_masked_whole_and_every_field_by_value():
    register_secret(PLANTED)
    record = Record(
        flops_per_token=2.5e9,
        token=f"echoed {PLANTED} back",
        password="hunter2-not-registered",
        headers={"Authorization": "Bearer abcdef123456", "x-api-key": "k-1234", "accept": "json"},
        blocks=[Block(api_key="a-key-value", flops_per_token=7.0)],
        by_name={"ref": Block(api_key="b-key-value")},
        encoded=PLANTED,
    )
    line = json.loads(record_line(record))
    assert line["flops_per_token"] == 2.5e9
    assert line["token"] == f"echoed {MASK} back"
    assert line["password"] == MASK
    assert line["headers"] == {"Authorization": MASK, "x-api-key": MASK, "accept": "json"}
    assert line["blocks"] == [{"api_key": MASK, "flops_per_token": 7.0}]
    assert line["by_name"] == {"ref": {"api_key": MASK, "flops_per_token": 0.0}}
    assert line["encoded"] == PLANTED


def test_a_line_read_back_is_masked_by_the_same_rules_whatever_its_shape():
    register_secret(PLANTED)
    read = {
        "flops_per_token": 3,
        "password": "hand-written",
        "blocks": "not a list",  # a hand-edited file: masked as free-form data
        "by_name": {"ref": {"api_key": "x-key-value", "extra": PLANTED}},
        "newer_field": {"token": "abc123xyz"},  # a newer writer's field: free-form
    }
    assert mask_fields(Record, read) == {
        "flops_per_token": 3,
        "password": MASK,
        "blocks": "not a list",
        "by_name": {"ref": {"api_key": MASK, "extra": MASK}},
        "newer_field": {"token": MASK},
    }
