# halt: terminates
# why: x grows by 0.1 each pass; the guard is x < 1.0, not x != 1.0, so it fails after about 10 passes whatever the rounding.
x = 0.0
while x < 1.0:
    x += 0.1
