"""ledger: bookkeeping helpers (money, dates, stock, taxes, invoices)."""
