# halt: terminates
# why: x doubles from 1 and the loop ends once it passes a million (21 passes).
x = 1
while x <= 10**6:
    x *= 2
