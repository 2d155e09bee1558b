# halt: diverges
# why: itertools.count() yields 0, 1, 2, ... forever; none is negative, so the break never runs.
import itertools

for i in itertools.count():
    if i < 0:
        break
