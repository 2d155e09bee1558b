# halt: diverges
# why: x goes up by 1 and down by 1 in every pass: it stays 0 < 10.
x = 0
while x < 10:
    x += 1
    x -= 1
