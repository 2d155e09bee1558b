# halt: terminates
# why: Fibonacci numbers grow without bound, so b > 1000 holds after 17 passes.
a, b = 0, 1
while b <= 1000:
    a, b = b, a + b
