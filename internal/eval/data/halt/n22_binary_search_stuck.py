# halt: diverges
# why: 19 is not in the list; once hi = lo + 1 with a[lo] < 19, mid = lo and lo = mid changes nothing (lo = 9, hi = 10).
a = list(range(0, 20, 2))
target = 19
lo, hi = 0, len(a)
while lo < hi:
    mid = (lo + hi) // 2
    if a[mid] < target:
        lo = mid
    elif a[mid] > target:
        hi = mid
    else:
        break
