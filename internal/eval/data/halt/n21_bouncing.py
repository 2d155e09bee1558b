# halt: diverges
# why: x alternates 0, 50, 0, 50 (abs(0 - 50) = 50, abs(50 - 50) = 0), always below 100.
x = 0
while x < 100:
    x = abs(x - 50)
