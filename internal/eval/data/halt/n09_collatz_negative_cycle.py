# halt: diverges
# why: From -5 the Collatz map cycles -5, -14, -7, -20, -10, -5 and never reaches 1.
n = -5
while n != 1:
    n = n // 2 if n % 2 == 0 else 3 * n + 1
