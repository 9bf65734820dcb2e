"""Image formats, read and built without I/O: SIF files, OCI registry documents and
layers, digests, the build definition, the argv of the image tools, and which MPI an
image holds."""
