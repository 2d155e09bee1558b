# halt: diverges
# why: i stays even ((even + 2) % 10 is even), so it never equals 7.
i = 0
while i != 7:
    i = (i + 2) % 10
