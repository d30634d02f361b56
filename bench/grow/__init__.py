"""`ragbench grow`: a knowledge base grown in rungs, measured per rung, and the answer (what breaks first)."""
