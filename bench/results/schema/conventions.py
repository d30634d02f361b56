"""How the results file writes a field: every field always, but those marked written only when set."""

# A field added after version 2 that the writer leaves out while it holds its default (None, [], {} or False), so that
# a file which does not use it reads and writes back unchanged (tests/results/v2); the schema does not
# require it.
WRITTEN_WHEN_SET = {"written_when_set": True}

# A field's description in docs/results.schema.json is its trailing comment, or else the `#:` lines right above it
# (bench/results/json_schema.py); a plain `#` line above fields heads a group and describes none of them.
