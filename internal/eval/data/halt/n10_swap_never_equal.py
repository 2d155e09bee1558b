# halt: diverges
# why: Swapping two different values keeps them different: a != b holds forever.
a, b = 1, 2
while a != b:
    a, b = b, a
