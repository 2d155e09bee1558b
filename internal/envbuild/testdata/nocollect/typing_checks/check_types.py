"""Not a test module: what a type checker reads."""

from halve import halve

reveal = halve(4)
