"""Container images and runtimes (Apptainer first): pure argv builders, image refs."""
