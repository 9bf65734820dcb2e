"""The body of a TES 1.1 CreateTask request, as typed models (the specification's
`tesTask` and its parts). Fields a server sets (`id`, `state`, `logs`,
`creation_time`) and fields of other TES versions are ignored, as TES 1.0 clients send
some of them; a wrong type is a 422 naming the field, as for every request (numbers and
booleans are strict: "2" is no count, 0 no boolean, as the schema says)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
)

from rules.text import ENV_NAME, LABEL_KEY

_LENIENT = ConfigDict(extra="ignore", frozen=True)
# Sizes of the lists and maps a task may carry: generous, never unbounded.
_MANY = 4096
# Tags are the job's labels and env its container's environment: the same rules.
_Tags = Annotated[
    dict[Annotated[str, AfterValidator(LABEL_KEY.check)], Annotated[str, Field(max_length=255)]],
    Field(max_length=64, json_schema_extra={"propertyNames": {"pattern": LABEL_KEY.json_pattern}})]
_Env = Annotated[
    dict[Annotated[str, AfterValidator(ENV_NAME.check)], Annotated[str, Field(max_length=65536)]],
    Field(max_length=1024, json_schema_extra={"propertyNames": {"pattern": ENV_NAME.json_pattern}})]


class TesFileType(StrEnum):
    """`tesFileType`."""

    FILE = "FILE"
    DIRECTORY = "DIRECTORY"


class TesExecutor(BaseModel):
    """`tesExecutor`: one command in one container image."""

    model_config = _LENIENT
    image: Annotated[str, Field(min_length=1, max_length=1024)]
    # Every word non-empty (the first names the program): stricter than TES's schema,
    # and said in this API's own schema.
    command: Annotated[list[Annotated[str, Field(min_length=1, max_length=65536)]],
                       Field(min_length=1, max_length=_MANY)]
    workdir: str | None = None
    stdin: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    env: _Env = {}
    ignore_error: StrictBool = False


class TesInput(BaseModel):
    """`tesInput`."""

    model_config = _LENIENT
    path: str
    url: str | None = None
    content: str | None = None
    name: str | None = None
    description: str | None = None
    type: TesFileType = TesFileType.FILE
    streamable: StrictBool = False


class TesOutput(BaseModel):
    """`tesOutput`."""

    model_config = _LENIENT
    path: str
    url: str
    path_prefix: str | None = None
    name: str | None = None
    description: str | None = None
    type: TesFileType = TesFileType.FILE


class TesResources(BaseModel):
    """`tesResources`."""

    model_config = _LENIENT
    cpu_cores: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    ram_gb: Annotated[StrictFloat, Field(ge=0)] | None = None
    disk_gb: Annotated[StrictFloat, Field(ge=0)] | None = None
    preemptible: StrictBool | None = None
    zones: Annotated[list[str], Field(max_length=256)] = []
    backend_parameters: Annotated[dict[str, str], Field(max_length=64)] = {}
    backend_parameters_strict: StrictBool = False


class TesTask(BaseModel):
    """`tesTask` as a client creates it."""

    model_config = _LENIENT
    name: Annotated[str, Field(max_length=255)] | None = None
    description: str | None = None
    executors: Annotated[list[TesExecutor], Field(min_length=1, max_length=64)]
    inputs: Annotated[list[TesInput], Field(max_length=_MANY)] = []
    outputs: Annotated[list[TesOutput], Field(max_length=_MANY)] = []
    resources: TesResources | None = None
    volumes: Annotated[list[str], Field(max_length=256)] = []
    tags: _Tags = {}
