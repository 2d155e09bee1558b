# halt: diverges
# why: a and b swap truth values each pass; the loop needs both false at once, which never happens.
a, b = True, False
while a or b:
    a, b = b, a
