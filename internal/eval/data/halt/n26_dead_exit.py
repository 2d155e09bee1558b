# halt: diverges
# why: The sys.exit is under if False and never runs.
import sys

while True:
    if False:
        sys.exit(0)
