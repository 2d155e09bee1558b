# halt: diverges
# why: Adding 0.1 ten times gives 0.9999999999999999, not 1.0; x then keeps growing past 1.0, so x != 1.0 stays true.
x = 0.0
while x != 1.0:
    x += 0.1
