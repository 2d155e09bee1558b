# halt: diverges
# why: The inner loop tests j but increments i, so j < 3 holds forever in the first outer pass.
for i in range(3):
    j = 0
    while j < 3:
        i += 1
