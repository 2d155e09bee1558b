# halt: diverges
# why: gen yields 1 forever; the loop breaks only on a 2.
def gen():
    while True:
        yield 1

for v in gen():
    if v == 2:
        break
