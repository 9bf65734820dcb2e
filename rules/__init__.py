"""Pure rules about the text users put in jobs, shared by every package.

`text` validates names and labels (full matches), `job_paths` the paths inside a job's
directory, `output_globs` the output patterns, `env_names` environment variable names.
Below `adapters`, `containers`, `workflows` and the gateway: it imports none of them.
"""
