# halt: terminates
# why: Each pass drops one character of a 30-character string; the empty string ends the loop.
s = "abc" * 10
while s:
    s = s[1:]
