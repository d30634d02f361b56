"""The scripted TEI-shaped server, as a fixture here too."""

from tests.load.conftest import load_server  # noqa: F401
