"""Fixtures shared with the load tests."""

from tests.load.conftest import load_server  # noqa: F401  (the scripted TEI-shaped server, as a fixture here too)
