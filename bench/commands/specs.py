"""The face where a target or endpoint spec string, from the command line or a suite file, becomes its typed
value: every command and the suite reader go through these, so each spec is parsed at one site
(tests/test_parse_sites.py lists them) and what follows receives the typed spec, never the string.

`known`: specs a caller parsed already (the suite reader, its [targets] and [endpoints] tables), by the text
the request carries (`NAME=SPEC`): taken as they are, not parsed again.
"""

from __future__ import annotations

from collections.abc import Mapping

from bench.core.errors import UserError
from bench.endpoints.spec import EndpointSpec, parse_endpoint_spec
from bench.targets.base import TargetSpec
from bench.targets.registry import parse_spec_text, parse_target_spec


def target_specs(texts: list[str], known: Mapping[str, TargetSpec] | None = None) -> list[TargetSpec]:
    """`-t [NAME=]kind[:variant][+rerank][@url][?k=v]` each parsed, its kind's settings checked."""
    return [known[t] if known and t in known else parse_target_spec(t) for t in texts]


def target_grammar(texts: list[str]) -> list[TargetSpec]:
    """The grammar alone, the kind's settings not yet checked: grow takes its own `pid=` and `data_dir=` off
    first (bench/grow/resources.py), then checks the rest (bench/targets/registry.check_settings)."""
    return [parse_spec_text(t) for t in texts]


def endpoint_specs(texts: list[str], known: Mapping[str, EndpointSpec] | None = None) -> list[EndpointSpec]:
    """`-e NAME=SPEC` each parsed."""
    return [known[t] if known and t in known else parse_endpoint_spec(t) for t in texts]


def endpoints_by_name(texts: list[str], known: Mapping[str, EndpointSpec] | None = None) -> dict[str, EndpointSpec]:
    """`-e NAME=SPEC` options by name; a name given twice is an error."""
    endpoints: dict[str, EndpointSpec] = {}
    for spec in endpoint_specs(texts, known):
        if spec.name in endpoints:
            raise UserError(f"endpoint {spec.name}: given twice (-e NAME=SPEC, one per name)")
        endpoints[spec.name] = spec
    return endpoints
