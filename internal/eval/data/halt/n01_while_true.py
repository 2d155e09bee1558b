# halt: diverges
# why: while True with an empty body: nothing can leave the loop.
while True:
    pass
