# halt: terminates
# why: d['n'] falls by 1 from 20 and the loop ends at 0.
d = {"n": 20}
while d["n"]:
    d["n"] -= 1
