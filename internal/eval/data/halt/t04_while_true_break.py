# halt: terminates
# why: i rises by 1 from 0; the break runs when i reaches 1000.
i = 0
while True:
    if i == 1000:
        break
    i += 1
