"""Worker steps that run on a timer of their own rather than for each site: housekeeping,
predicted starts between routing passes, the audit log's sequencer."""
