"""Container images and runtimes for MPI jobs. Pure: no I/O, never imports the gateway.

- refs: image references (docker://, oras://, library://, https:// SIF, upload:<id>)
- runtimes: runtimes, MPI modes, launchers, MPI implementations and ABI families
- versions: release numbers compared as numbers
- site_caps: what a site declares (runtimes, MPI flavours, bind paths, registry reach)
- binds: bind mounts a job may ask for
- compat: whether and how an image runs at a site (Fit or Refusal)
- launch: launch lines as argv, and one shell line for a batch script
- sif: the SIF format read from a stream the caller opened (header, objects, partitions)
- digest: an image's sha256 and its verification
- mpi_abi: an image's MPI family and ABI, from the library names inside it
- image_def: the definition `gridgate image build` reads; image_tools: its tools' argv
- errors: the one error tree (ContainerError, a ValueError)
"""
