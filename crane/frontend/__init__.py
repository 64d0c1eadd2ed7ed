"""Frontends: `.crn` model files (``crane.frontend.crn``) to an elaborated Network model.

Nothing heavy is imported here, so that tools which never read a model start fast.
"""
