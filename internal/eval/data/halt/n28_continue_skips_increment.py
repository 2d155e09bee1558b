# halt: diverges
# why: continue goes back to the guard before x += 1 can run, so x stays 0.
x = 0
while x < 5:
    continue
    x += 1
