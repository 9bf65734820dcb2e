"""Sites: the federation's members as the gateway holds them.

`entry` is one configured site (`SiteEntry`: shape, adapters, who it serves); `registry`
holds them by name, built from the site configs (`remote` opens a site reached over SSH)
and from `local_host` (this host probed once: cores, memory, MPI, the local jobs'
sandbox); `check` (with `check_containers` and `check_report`) is `gridgate site check`:
a site proven to work before it takes jobs.
"""
