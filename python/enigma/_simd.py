"""_simd family of the Enigma language."""

__all__ = []
