"""Routing: which site a job goes to, when it will start there, and why.

`placement` runs a routing pass over pending jobs (admission and ranking themselves are
pure, in `gateway.scheduling`); `forecasting` builds each site's forecaster from its
queue snapshot and history (`site_snapshots`, `site_load`, `history_import`);
`decisions` turns a decision into the documents the API returns; `site_bans` finds
black-hole sites; `failover` moves a job whose site let it down.
"""
