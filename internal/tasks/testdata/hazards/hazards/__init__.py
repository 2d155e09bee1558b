"""Functions whose mutants hang or break the import of their module."""
