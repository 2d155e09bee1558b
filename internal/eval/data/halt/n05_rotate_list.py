# halt: diverges
# why: Each pass pops the last element and appends it back: the list never empties.
lst = [1, 2, 3]
while lst:
    lst.append(lst.pop())
