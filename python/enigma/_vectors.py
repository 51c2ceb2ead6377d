"""_vectors family of the Enigma language."""

__all__ = []
