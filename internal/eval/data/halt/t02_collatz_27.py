# halt: terminates
# why: The Collatz sequence of 27 is known to reach 1 after 111 steps (checked by running).
n = 27
steps = 0
while n != 1:
    n = n // 2 if n % 2 == 0 else 3 * n + 1
    steps += 1
