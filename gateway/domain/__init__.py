"""Plain types every layer shares: the job spec and its parts, states, the caller
(`principal`), sizes, and the gateway's error tree (`errors`). No I/O."""
