# halt: terminates
# why: hi - lo shrinks every pass (mid + 1 or mid, with mid < hi), so lo < hi fails within log2(1000) + 1 passes.
a = list(range(0, 2000, 2))
target = 1234
lo, hi = 0, len(a)
while lo < hi:
    mid = (lo + hi) // 2
    if a[mid] < target:
        lo = mid + 1
    else:
        hi = mid
