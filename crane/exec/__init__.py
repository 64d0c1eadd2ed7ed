"""Execution support for Crane: numpy reference kernels used by the reference interpreter."""
