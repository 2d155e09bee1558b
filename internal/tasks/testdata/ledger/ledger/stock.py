"""Stock levels of items."""


class OutOfStock(Exception):
    """Raised when more is taken than there is."""


class Stock:
    def __init__(self):
        self.levels = {}

    def add(self, item, quantity):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.levels[item] = self.levels.get(item, 0) + quantity

    def remove(self, item, quantity):
        have = self.levels.get(item, 0)
        if quantity > have:
            raise OutOfStock("%s: want %d, have %d" % (item, quantity, have))
        self.levels[item] = have - quantity
        if self.levels[item] == 0:
            del self.levels[item]

    def value(self, prices):
        """Total value in cents; items without a price count as zero."""
        return sum(prices.get(item, 0) * qty for item, qty in self.levels.items())

    def low(self, threshold):
        """Items at or below threshold, most urgent first."""
        items = [(qty, item) for item, qty in self.levels.items() if qty <= threshold]
        return [item for qty, item in sorted(items)]
