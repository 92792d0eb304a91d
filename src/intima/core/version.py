"""The installed package version, stored with every result."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("intima")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+unknown"
