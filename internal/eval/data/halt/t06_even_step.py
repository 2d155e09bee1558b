# halt: terminates
# why: x starts at 10 and falls by 2: 10, 8, ..., 0, so x != 0 fails after 5 passes.
x = 10
while x != 0:
    x -= 2
