# halt: terminates
# why: next() on an iterator of 5 values raises StopIteration on the sixth call, uncaught: the program ends with it.
it = iter(range(5))
while True:
    next(it)
