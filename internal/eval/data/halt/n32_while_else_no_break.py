# halt: diverges
# why: The inner for always finishes (its else resets n to 1), so n never becomes 0.
n = 1
while n:
    for i in range(3):
        n = 0
    else:
        n = 1
