# halt: terminates
# why: A list iterator walks by index: after the first pass the list has one element again (append then delete the head) and the index is 1, so iteration stops.
lst = [0]
for x in lst:
    lst.append(x)
    del lst[0]
