"""The REST API (FastAPI): the app factory, dependencies, problem documents, OpenAPI.

`app.create_app` builds the application; `deps` holds the `Annotated` dependencies the
routes take (the runtime, the caller, a unit of work); `problems` and `problem_types`
turn every `GatewayError` into an RFC 9457 document; `routes/` has one module per
resource; `http/` is plumbing that knows no gridgate concept.
"""
