# halt: diverges
# why: step returns its argument, so n stays 5 and n > 0 stays true.
def step(n):
    return n

n = 5
while n > 0:
    n = step(n)
