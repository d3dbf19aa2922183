"""Moved to `sparsify.persistence` (the kernels use it too); this path still imports its names."""

from sparsify.persistence import (
    VERSION_KEY,
    IncompatibleVersionError,
    VersionedPickleMixin,
    check_version,
    current_version,
    is_compatible,
    major_minor,
)

__all__ = ["VERSION_KEY", "IncompatibleVersionError", "VersionedPickleMixin", "check_version",
           "current_version", "is_compatible", "major_minor"]
