"""Every error the container core raises, in one tree. No HTTP here: the gateway maps them.

    ContainerError            anything the container core refuses; `str()` says what to write
    ├── InvalidImageRef       an image reference that is not one of the accepted forms
    ├── InvalidBind           a bind mount that would leave the job directory or break a flag
    ├── InvalidLaunch         a launch that cannot be built (mode, launcher, env, command)
    ├── InvalidDeclaration    a site's container declaration that contradicts itself
    ├── DefinitionError       an image definition `gridgate image build` cannot follow
    ├── SifFormatError        bytes that are not a SIF this reader understands (or damaged)
    ├── RegistryFormatError   a registry document (manifest, index) the gateway cannot use
    ├── UnsafeLayerEntry      an image layer entry that would write outside the root
    └── DigestMismatch        an image whose sha256 is not the expected one

A `ValueError` on purpose: pydantic turns one raised by a validator into a 422 with the
message, so the gateway's schemas can call these checks as they are. An incompatibility
between an image and a site is not an error: `compat.check` returns a `Refusal`.
"""

from __future__ import annotations


class ContainerError(ValueError):
    """Base of every refusal of the container core; the message is for a person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidImageRef(ContainerError):
    """An image reference the gateway does not accept."""


class InvalidBind(ContainerError):
    """A bind mount outside what the job and the site allow."""


class InvalidLaunch(ContainerError):
    """A container launch that cannot be built as asked."""


class InvalidDeclaration(ContainerError):
    """A site's declaration of runtimes, MPI flavours or bind paths that contradicts itself."""


class DefinitionError(ContainerError):
    """An image definition `image build` cannot follow; the message names the key."""


class SifFormatError(ContainerError):
    """The bytes are not a SIF image this reader understands, or it is damaged."""


class RegistryFormatError(ContainerError):
    """A registry manifest or index that is not one the gateway can pull."""


class UnsafeLayerEntry(ContainerError):
    """An image layer entry that would write or link outside the image's root."""


class DigestMismatch(ContainerError):
    """The bytes are not the ones the expected digest names."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"The image's digest is sha256:{actual}, not the expected "
                         f"sha256:{expected}: it is damaged or another image.")
        self.expected = expected
        self.actual = actual
