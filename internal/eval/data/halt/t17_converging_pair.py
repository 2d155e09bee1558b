# halt: terminates
# why: y - x falls by 5 each pass from 100, so x < y fails after 20 passes.
x, y = 0, 100
while x < y:
    x += 3
    y -= 2
