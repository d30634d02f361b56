"""Sizing TEI hardware: saturation under a p99 SLO and its recommendations, the in-process ceiling, GPU telemetry."""
