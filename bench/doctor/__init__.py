"""Probes of each hop of a deployed stack (Open WebUI, TEI, LiteLLM, LightRAG), one finding per problem."""
