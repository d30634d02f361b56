"""The CI gate: compare a run against its baseline, and the gate's outputs
(text, md, JUnit, summary, benchmark JSON)."""
