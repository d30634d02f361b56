"""Lowest layer: errors, secrets and masking, interruption, progress, the spec grammar, the one HTTP layer,
option values and their bounds. Imports nothing else of bench."""
