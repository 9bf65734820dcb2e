"""Container images and runtimes for MPI jobs. Pure: no I/O, never imports the gateway.

- refs: image references (docker://, oras://, library://, https:// SIF, upload:<id>)
- runtimes: runtimes, MPI modes, launchers, MPI implementations and ABI families
- versions: release numbers compared as numbers
- site_caps: what a site declares (runtimes, MPI flavours, bind paths, registry reach)
- binds: bind mounts a job may ask for
- compat: whether and how an image runs at a site (Fit or Refusal)
- launch: launch lines as argv, and one shell line for a batch script
- errors: the one error tree (ContainerError, a ValueError)
"""
