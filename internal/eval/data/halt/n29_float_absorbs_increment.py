# halt: diverges
# why: 1e16 + 1 rounds back to 1e16, so x never changes and y == x holds forever.
x = 1e16
y = x
while y == x:
    x += 1
