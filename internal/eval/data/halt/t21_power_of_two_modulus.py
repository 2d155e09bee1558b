# halt: terminates
# why: x doubles modulo 1024 = 2**10 from 1: 2, 4, ..., 512, then 1024 % 1024 = 0 ends the loop.
x = 1
while x != 0:
    x = (x * 2) % 1024
