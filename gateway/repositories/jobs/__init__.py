"""Jobs and what hangs off them: job rows, attempts, targets, events, placements, arrays
and dependencies, native arrays, outputs, and the read side the API lists from."""
