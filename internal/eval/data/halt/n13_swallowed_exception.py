# halt: diverges
# why: The ValueError is raised and caught on every pass; continue goes round again and nothing breaks.
while True:
    try:
        raise ValueError("again")
    except ValueError:
        continue
