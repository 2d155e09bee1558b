# halt: diverges
# why: x*x % 7 from 3: 2, 4, 2, 4, ...; 1 never comes.
x = 3
while x != 1:
    x = x * x % 7
