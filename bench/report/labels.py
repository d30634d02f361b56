"""A run's labels as every report prints them, beside the run's date: one short sentence."""

from __future__ import annotations

from bench.results.schema import RunHeader


def labels_sentence(header: RunHeader) -> str:
    """` Labels: branch=main (CI), stack=prod.` after the sentence that dates the run; empty: a run without labels."""
    if not header.labels:
        return ""
    from_ci = set(header.provenance.ci_labels) if header.provenance is not None else set()
    said = [f"{key}={value}" + (" (CI)" if key in from_ci else "") for key, value in sorted(header.labels.items())]
    return f" Labels: {', '.join(said)}."
