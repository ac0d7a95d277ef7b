"""Installed package versions for the records a run, a dataset, a replay or an export writes."""

from __future__ import annotations

from importlib import metadata


def package_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None where it is not installed: the project run from a
    source tree without ``pip install`` (``PYTHONPATH=.``, as on a machine that cannot reach a package index)."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions(*names: str) -> dict[str, str | None]:
    """``{name: package_version(name)}`` for each of ``names``."""
    return {name: package_version(name) for name in names}
