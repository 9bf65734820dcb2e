"""Container images and runtimes for MPI jobs: image references, site declarations,
compatibility rules and launch lines. Pure: no I/O, never imports the gateway."""
