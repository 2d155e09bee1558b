# halt: terminates
# why: Assigning to i inside a for loop does not change what range yields next: 10 passes.
for i in range(10):
    i = 100
