"""Dialect-independent passes: canonicalize, cse, dce, strip-debuginfo, print-op-stats."""
