"""One request dataclass and one plain function per command; the CLI and suite files call the same functions."""
