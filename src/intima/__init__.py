"""intima: run the INTIMA companionship benchmark against any model and compare the results."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("intima")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
