"""Jobs: what a researcher asks for and reads back about a single job.

`submission` takes a job in (validates, resolves its project, prices it, records it) and
cancels it; `dependencies`, `gates`, `arrays` and `holds` decide when a job may go;
`inputs` and `outputs` are its files; `queries` and `story` are what people read.
Routing (`gateway.services.routing`) and the run itself (`gateway.services.lifecycle`)
come after.
"""
