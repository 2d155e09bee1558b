# halt: terminates
# why: Two for loops over ranges of 50: 2500 passes of the inner body.
total = 0
for i in range(50):
    for j in range(i, 50):
        total += i * j
