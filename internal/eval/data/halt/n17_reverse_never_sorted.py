# halt: diverges
# why: [3, 1, 2] reversed is [2, 1, 3], reversed again is [3, 1, 2]: neither is sorted, so the guard holds forever.
lst = [3, 1, 2]
while lst != sorted(lst):
    lst.reverse()
