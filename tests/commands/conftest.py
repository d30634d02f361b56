"""Fixtures shared with the gate and load tests: a suite runs the same targets and servers."""

from tests.gate.conftest import worse_kind  # noqa: F401  (the `worse` target kind, as a fixture here too)
from tests.load.conftest import load_server  # noqa: F401  (the scripted TEI-shaped server, as a fixture here too)
