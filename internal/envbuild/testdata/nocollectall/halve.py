def halve(n: int) -> int:
    return n // 2
