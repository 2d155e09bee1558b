# halt: diverges
# why: i climbs to 9 and is reset to 0 before the guard sees 10: i < 10 holds forever.
i = 0
while i < 10:
    i += 1
    if i == 9:
        i = 0
