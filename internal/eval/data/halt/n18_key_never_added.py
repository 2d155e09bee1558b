# halt: diverges
# why: Only d['a'] changes; 'b' is never put in d.
d = {"a": 1}
while "b" not in d:
    d["a"] += 1
