# halt: terminates
# why: McCarthy's 91 function terminates for every integer (a classic proof); M(50) = 91 after a few dozen calls.
def m91(n):
    if n > 100:
        return n - 10
    return m91(m91(n + 11))

m91(50)
