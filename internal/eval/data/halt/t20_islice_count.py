# halt: terminates
# why: itertools.count is infinite but islice takes 100 values of it.
import itertools

for v in itertools.islice(itertools.count(), 100):
    pass
