# halt: terminates
# why: Each pass removes one element and adds none; the list of 100 empties.
lst = list(range(100))
while lst:
    lst.pop()
