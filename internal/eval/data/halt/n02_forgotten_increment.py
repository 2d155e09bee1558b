# halt: diverges
# why: i is never changed in the body, so i < 10 stays true.
i = 0
while i < 10:
    pass
