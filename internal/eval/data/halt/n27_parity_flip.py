# halt: diverges
# why: i alternates 10, 11, 10, 11 (even: +1, odd: -1), always >= 0.
i = 10
while i >= 0:
    i += 1 if i % 2 == 0 else -1
