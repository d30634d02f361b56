"""How a p-value is printed, in every table and gate line: four decimals, or two significant digits below 1e-4.

>>> fmt_p(0.04213), fmt_p(3.2e-06), fmt_p(float("nan"))
('0.0421', '3.2e-06', '–')
"""

from __future__ import annotations

import math


def fmt_p(p: float) -> str:
    """`p` as the reports and the gate print it; NaN (no test made) as a dash."""
    if math.isnan(p):
        return "–"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"
