"""Everything that talks to a site. Never imports the gateway."""
