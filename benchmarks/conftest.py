"""pytest-benchmark for the speed figures in docs/benchmarks.md:

    pytest benchmarks/ --benchmark-only --benchmark-json bench.json          # seconds to a few minutes
    pytest benchmarks/ --benchmark-only --benchmark-json bench.json --demo   # also `ragbench demo` (minutes)

pytest-benchmark times each call; what a target is about but a timer cannot see (ragbench's own share of
a call, peak memory, a quality figure) goes into each benchmark's `extra_info`, and every figure is
printed at the end. Nothing here is a pass/fail limit on time: the figures are read against the targets
in docs/benchmarks.md. The machine's load (`os.getloadavg()`) is recorded in the JSON's machine_info and
per benchmark, since on a shared machine it changes every figure.
"""

from __future__ import annotations

import os

import pytest

_FIGURES: list[str] = []


def pytest_addoption(parser):
    parser.addoption("--demo", action="store_true", help="also time `ragbench demo` (fresh cache and rerun, minutes)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--demo"):
        return
    demo = [item for item in items if item.get_closest_marker("demo")]
    if demo:  # deselected, not skipped: nothing is reported as measured that was not
        config.hook.pytest_deselected(items=demo)
        items[:] = [item for item in items if item not in demo]


def pytest_configure(config):
    config.addinivalue_line("markers", "demo: times `ragbench demo` (runs only with --demo)")


def pytest_benchmark_update_machine_info(config, machine_info):
    machine_info["loadavg_1_5_15"] = os.getloadavg()
    machine_info["cpu_count"] = os.cpu_count()


@pytest.fixture
def figures(benchmark, request):
    """Record a benchmark's figures: into its JSON (extra_info) and the printed summary."""

    def record(line: str, **values) -> None:
        benchmark.extra_info.update(values, loadavg_1m=round(os.getloadavg()[0], 2))
        _FIGURES.append(f"{request.node.name}: {line} (load average {os.getloadavg()[0]:.1f})")

    return record


def pytest_terminal_summary(terminalreporter):
    if _FIGURES:
        terminalreporter.section("ragbench figures")
        for line in _FIGURES:
            terminalreporter.write_line(line)
