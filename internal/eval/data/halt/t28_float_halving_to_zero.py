# halt: terminates
# why: Halving a positive double underflows to 0.0 after about 1075 passes (through the subnormals), so x != 0 fails.
x = 1.0
while x != 0:
    x = x / 2
