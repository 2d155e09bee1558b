# halt: diverges
# why: Each pass pops one element and pushes it back: the stack never empties.
stack = [1]
while stack:
    x = stack.pop()
    stack.append(x)
