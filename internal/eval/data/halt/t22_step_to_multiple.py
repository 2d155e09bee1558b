# halt: terminates
# why: x = 7 + 3k; 7 + 3 = 10 is a multiple of 5, so the loop ends after one pass.
x = 7
while x % 5 != 0:
    x += 3
