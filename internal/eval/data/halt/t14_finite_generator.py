# halt: terminates
# why: The generator yields 1000 values and returns; sum consumes them.
def gen(n):
    i = 0
    while i < n:
        yield i
        i += 1

sum(gen(1000))
