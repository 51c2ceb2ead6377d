"""_cooperation family of the Enigma language."""

__all__ = []
