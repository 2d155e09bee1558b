# halt: terminates
# why: 1e16 + 1 rounds to 1e16 (doubles there are 2 apart), so the guard x + 1 != x is false at once.
x = 1e16
while x + 1 != x:
    x += 1
