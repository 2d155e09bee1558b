# halt: diverges
# why: done() never becomes true: it compares a counter that the loop resets every pass.
def done(k):
    return k > 3

k = 0
while not done(k):
    k += 1
    k = k % 3
