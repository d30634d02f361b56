"""ragbench: a benchmark suite for RAG retrieval stacks.

The public surface is small: load a dataset, build targets, run the quality pipeline.
"""

__version__ = "0.1.0"
