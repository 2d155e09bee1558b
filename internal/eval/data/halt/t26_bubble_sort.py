# halt: terminates
# why: Bubble sort of 30 elements: the outer loop runs 30 times, the inner at most 29.
a = [(i * 7919) % 31 for i in range(30)]
for i in range(len(a)):
    for j in range(len(a) - 1 - i):
        if a[j] > a[j + 1]:
            a[j], a[j + 1] = a[j + 1], a[j]
