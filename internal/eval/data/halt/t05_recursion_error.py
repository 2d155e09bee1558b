# halt: terminates
# why: g calls itself without a base case; CPython's recursion limit (1000) raises RecursionError, which ends the program.
def g(n):
    return g(n + 1)

g(0)
