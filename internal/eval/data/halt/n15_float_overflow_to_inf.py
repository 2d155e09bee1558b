# halt: diverges
# why: Doubling 1.0 overflows to inf after 1024 passes, and inf * 2 is inf, still > 0.
x = 1.0
while x > 0:
    x = x * 2
