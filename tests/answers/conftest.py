import pytest


@pytest.fixture(autouse=True)
def private_embedding_cache(tmp_path_factory, monkeypatch):
    """Each test session encodes into its own cache, so no result depends on an earlier run's cache."""
    monkeypatch.setenv("RAGBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "ragbench-cache"))
