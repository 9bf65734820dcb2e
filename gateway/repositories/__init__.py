"""Repositories: every SQL statement of the gateway, one module per aggregate.

Services call repositories and flush; they never commit. The unit of work
(`gateway.db.engine.transaction`) commits at the boundary: one per request,
one per worker step, one per admin command.
"""
