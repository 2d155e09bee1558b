# halt: terminates
# why: Each element x > 0 that is even is replaced by x // 2 < x; odd ones and 0 add nothing. The multiset of values decreases, so the worklist empties.
lst = list(range(10))
while lst:
    x = lst.pop()
    if x % 2 == 0 and x > 0:
        lst.append(x // 2)
