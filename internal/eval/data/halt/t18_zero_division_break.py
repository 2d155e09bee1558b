# halt: terminates
# why: i rises by 1 from 0; at i = 10 the division raises ZeroDivisionError, which the except turns into a break.
i = 0
while True:
    try:
        1 / (10 - i)
    except ZeroDivisionError:
        break
    i += 1
