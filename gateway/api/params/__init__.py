"""Query parameters many routes share: paging (`limit`, `cursor`) and times (ISO 8601)."""
