# halt: terminates
# why: step raises ValueError when n reaches 3; nothing catches it, so the program ends.
def step(n):
    if n == 3:
        raise ValueError(n)
    return n + 1

n = 0
while True:
    n = step(n)
