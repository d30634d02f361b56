"""`ragbench ingest`: documents through the app (Open WebUI, LightRAG) under swept settings, metered, and the same
embedding calls sent straight to the embedder."""
