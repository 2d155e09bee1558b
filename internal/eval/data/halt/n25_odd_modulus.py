# halt: diverges
# why: x stays odd (odd * 3 is odd, and reducing modulo 1024 keeps parity), so it is never 0.
x = 1
while x != 0:
    x = (x * 3) % 1024
