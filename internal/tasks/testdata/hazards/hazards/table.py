"""A table built when the module is imported: a mutant of build_table can
make the import itself fail."""


def build_table(letters):
    """Map each letter to its code point."""
    return {c: ord(c) for c in letters}


TABLE = build_table("abc")
FIRST = TABLE["a"]
