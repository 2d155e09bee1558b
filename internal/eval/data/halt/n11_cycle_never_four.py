# halt: diverges
# why: itertools.cycle repeats 1, 2, 3 forever; the break needs a 4, which never comes.
import itertools

for x in itertools.cycle([1, 2, 3]):
    if x == 4:
        break
