"""Figures the real-server tests measure (throughput, latency): printed at the end of the run, never asserted.

Collected on whichever pytest-xdist worker ran the test and handed to the controller, which prints them
(tests/conftest.py's hooks).
"""

from __future__ import annotations

import numpy as np

from bench.targets.base import QueryResult


class Figures:
    def __init__(self) -> None:
        self.lines: dict[str, str] = {}
        self.remote_spent_s = 0.0  # setup + call + teardown of tests/targets/remote, servers' start and stop included

    def add(self, label: str, value: str) -> None:
        self.lines[label] = value

    def latency(self, label: str, results: list[QueryResult]) -> None:
        values = [r.latency_s * 1000 for r in results if not r.error]
        if values:
            self.add(
                label,
                f"p50 {np.percentile(values, 50):.0f} ms, p99 {np.percentile(values, 99):.0f} ms "
                f"({len(values)} queries)",
            )


FIGURES = Figures()
