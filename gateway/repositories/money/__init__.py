"""The bank's and the ledger's rows: allocations, liens, quotes, rate cards, usage records,
the audit log and its seals, and the statements behind committee reports."""
