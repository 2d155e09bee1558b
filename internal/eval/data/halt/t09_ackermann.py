# halt: terminates
# why: Ackermann's function is total; A(2, 3) = 9 needs a few hundred calls and a shallow stack.
def ack(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ack(m - 1, 1)
    return ack(m - 1, ack(m, n - 1))

ack(2, 3)
