"""Workflows: a DAG of steps submitted as one, each step becoming jobs.

`submission` validates and records a workflow; `advance` submits the steps whose inputs
are ready and settles the workflow's state; `inputs` wires step outputs into the next
steps' inputs; `queries` is what people read.
"""
