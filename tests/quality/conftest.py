"""Every test here encodes into its own session's cache."""

from tests.harness.fixtures import private_embedding_cache  # noqa: F401
