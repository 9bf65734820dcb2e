"""Container images: from a reference or an upload to a verified image a site can run.

`container_images` resolves a job's image (an upload or a registry reference);
`cache` keeps images by digest; `registry_client` and `registry_pull` speak the OCI
distribution API; `https_images` fetches images by URL; `layer_unpack` and `sif_pack`
turn OCI layers into a SIF without root.
"""
