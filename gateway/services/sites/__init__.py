"""Sites: the federation's members as the gateway holds them.

`registry` builds a `SiteEntry` per site (adapter, limits, local sandbox) from the site
configs; `remote` opens a site reached over SSH; `check` (with `check_containers` and
`check_report`) is `gridgate site check`: a site proven to work before it takes jobs.
"""
