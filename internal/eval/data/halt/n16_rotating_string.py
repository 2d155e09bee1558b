# halt: diverges
# why: s[1:] + 'a' of 'a' is 'a' again: s never becomes empty.
s = "a"
while s != "":
    s = s[1:] + "a"
