# halt: terminates
# why: Euclid's algorithm: b is replaced by a % b, which is smaller than b and not negative, so b reaches 0.
a, b = 1071, 462
while b:
    a, b = b, a % b
