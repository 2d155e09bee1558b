# halt: terminates
# why: i rises by 1 or 2 each pass and never falls, so i < 10 fails within 10 passes.
i = 0
while i < 10:
    i += 1 if i % 2 else 2
