# halt: terminates
# why: n starts at 100 and falls by 1 each pass; the loop ends when it reaches 0 (100 passes).
n = 100
while n > 0:
    n -= 1
