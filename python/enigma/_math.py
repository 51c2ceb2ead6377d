"""_math family of the Enigma language."""

__all__ = []
