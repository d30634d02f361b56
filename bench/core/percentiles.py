"""Percentiles of a list of measured values (latencies in ms), named as every report names them.

>>> percentiles([1.0, 2.0, 3.0], ("p50", "p99"))
{'p50': 2.0, 'p99': 2.98}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}


def percentiles(values: Sequence[float], names: Sequence[str] = ("p50", "p99")) -> dict[str, float]:
    """Each named percentile of `values` (numpy's linear interpolation); {} when there are none."""
    if not values:
        return {}
    array = np.asarray(values, dtype=float)
    return {name: float(np.percentile(array, PERCENTILES[name])) for name in names}
