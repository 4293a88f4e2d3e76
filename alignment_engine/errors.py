"""Errors raised by the engine."""


class EngineError(Exception):
    """Base class of the engine's own errors."""


class InputError(EngineError, ValueError):
    """Malformed input; the message starts with ``<file>:<line>:`` where a line is known."""


class ModelError(EngineError):
    """A model directory is missing, incomplete or of an unknown format version."""
