# halt: diverges
# why: x = 10 - 3k is never 0 (10 is not a multiple of 3), and x keeps falling below 0.
x = 10
while x != 0:
    x -= 3
