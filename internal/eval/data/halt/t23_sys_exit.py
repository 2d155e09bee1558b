# halt: terminates
# why: sys.exit raises SystemExit when i reaches 50, ending the program from inside while True.
import sys

i = 0
while True:
    i += 1
    if i == 50:
        sys.exit(0)
