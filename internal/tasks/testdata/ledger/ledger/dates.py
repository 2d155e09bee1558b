"""Calendar arithmetic without the datetime module's help."""

DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    """Gregorian leap years."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """Number of days of a month (1-12)."""
    if not 1 <= month <= 12:
        raise ValueError("month out of range: %d" % month)
    if month == 2 and is_leap(year):
        return 29
    return DAYS[month - 1]


def day_of_year(year, month, day):
    """1 for January 1st."""
    total = day
    for m in range(1, month):
        total += days_in_month(year, m)
    return total


def add_days(year, month, day, n):
    """The date n days after (n >= 0) the given one, as a tuple."""
    if n < 0:
        raise ValueError("only forward")
    while n > 0:
        left = days_in_month(year, month) - day
        if n <= left:
            return (year, month, day + n)
        n -= left + 1
        day = 1
        month += 1
        if month > 12:
            month = 1
            year += 1
    return (year, month, day)
