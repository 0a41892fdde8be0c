# A stand-in for a Triton 2.x package: no triton.backends.
__version__ = "2.3.1"
