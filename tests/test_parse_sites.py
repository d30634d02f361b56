"""Each spec a user gives is parsed at one site, its face, into a typed value that everything after it receives
(issue 49): the sites listed here are every call of every spec parser in bench/, so a second one (a command
that parses a string again, a report that re-parses what the results kept) fails this test until it is either
removed or listed here with the reason it is a face of its own.

The faces: a command's check (`check_load`, `check_quality`, `check_identity`, `size.check`, `grow_command`,
`ingest_command`), which builds the plan its command function, its report and a suite's reader receive; target
and endpoint specs go through bench/commands/specs.py alone.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

# parser -> {module: its call sites}. A parser of one kind of spec, per kind.
SPEC_SITES: dict[str, dict[str, dict[str, int]]] = {
    "target specs": {
        "parse_target_spec": {
            "bench/commands/specs.py": 1,
            # files written before results kept the parsed spec (TargetRecord.parsed): for those alone
            "bench/report/quality_tables.py": 1,
        },
        "parse_spec_text": {"bench/commands/specs.py": 1, "bench/targets/registry.py": 1},  # registry: its grammar
        # the commands' face: quality's and ingest's checks, the suite reader's [targets]
        "target_specs": {"bench/commands/quality.py": 1, "bench/commands/ingest.py": 1},
        "target_grammar": {"bench/commands/grow.py": 1},  # grow's pid=/data_dir= off first, then check_settings
    },
    "endpoint specs": {
        "parse_endpoint_spec": {"bench/commands/specs.py": 1},
        "endpoint_specs": {
            "bench/commands/specs.py": 1,  # endpoints_by_name
            "bench/commands/load.py": 1,  # check_load: load, --interleave and a suite's [[load]]
            "bench/commands/identity.py": 1,
            "bench/commands/size.py": 1,
            "bench/commands/load_trace.py": 1,  # trace_routes: load --trace and size --trace
            "bench/commands/quality.py": 1,  # endpoints_by_name, imported under quality's old name
        },
    },
    "SLOs": {
        "parse_slo": {"bench/commands/size.py": 1, "bench/commands/grow.py": 1},
    },
    "distributions": {
        "parse_lengths": {
            "bench/commands/load.py": 1,
            "bench/commands/size.py": 1,
            "bench/quality/background_spec.py": 1,  # --background's lengths= option, its own spec
        },
        "parse_documents": {"bench/commands/load.py": 1, "bench/commands/size.py": 1},
        "parse_arrival": {
            "bench/commands/load.py": 1,
            "bench/commands/size.py": 1,
            "bench/quality/background_spec.py": 1,
        },
        "parse_distractors": {"bench/commands/grow.py": 1},
        "background_spec": {"bench/commands/quality.py": 1},
    },
    "rungs": {"parse_rungs": {"bench/commands/grow.py": 1}},
    "routes": {
        "trace_routes": {"bench/commands/load_trace.py": 1, "bench/commands/size_trace.py": 1},
        "meter_upstreams": {"bench/commands/ingest.py": 1, "bench/commands/grow.py": 1},
    },
}

# duration(FLAG, ...) -> {module: call sites}: each flag of each command parsed once.
DURATION_SITES: dict[str, dict[str, int]] = {
    "--duration": {"bench/commands/load.py": 1, "bench/commands/size.py": 1},
    "--window": {"bench/commands/load.py": 1},
    "--warmup": {"bench/commands/load.py": 1, "bench/commands/size.py": 1},
    "--timeout": {"bench/commands/load.py": 1, "bench/commands/size.py": 1, "bench/commands/size_trace.py": 1},
    "--max-time": {"bench/commands/load.py": 1, "bench/commands/size.py": 1, "bench/commands/identity.py": 1},
    "--slice": {"bench/load/interleave_slices.py": 1},
    "--slo": {"bench/sizing/slo.py": 1},  # inside parse_slo
    # options inside a spec (`endpoint ...: option timeout=`, `--background ...: duration`): the spec's own parser
    "f-string": {"bench/endpoints/options.py": 1, "bench/quality/background_spec.py": 3},
}


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _flag(node: ast.Call) -> str:
    first = node.args[0] if node.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "f-string"


@functools.cache
def _calls() -> list[tuple[str, str, str]]:
    """(function, flag of a duration call or "", module) of every call in bench/."""
    found = []
    for path in sorted(BENCH.rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (name := _called(node)) is not None:
                found.append((name, _flag(node) if name == "duration" else "", module))
    return found


def test_each_spec_kind_is_parsed_at_its_listed_sites_alone():
    calls = _calls()
    for kind, parsers in SPEC_SITES.items():
        for parser, sites in parsers.items():
            found = Counter(module for name, _, module in calls if name == parser)
            assert dict(found) == sites, f"{kind}: {parser} called at {dict(found)}, listed {sites}"


def test_each_duration_flag_is_parsed_once_per_command():
    found: dict[str, Counter[str]] = {}
    for name, flag, module in _calls():
        if name == "duration" and module != "bench/core/values.py":
            found.setdefault(flag, Counter())[module] += 1
    assert {flag: dict(sites) for flag, sites in found.items()} == DURATION_SITES


def test_a_second_site_would_be_found(tmp_path: Path):
    """The walk sees a call however it is written: by name, and as an attribute of a module (`v.duration`)."""
    tree = ast.parse("from bench.core import values as v\nv.duration('--window', x, v.SECONDS)\nparse_rungs(t)\n")
    names = [(_called(n), _flag(n)) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert ("duration", "--window") in names and ("parse_rungs", "f-string") in names
