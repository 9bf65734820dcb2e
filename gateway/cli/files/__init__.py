"""Moving files between this machine and the gateway: uploads (resumable, verified), a
job's local inputs, its outputs, and the progress bars they show."""
