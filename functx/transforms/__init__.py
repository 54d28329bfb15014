"""Transforms: each is a Jaxpr -> Jaxpr rewrite (one file per transform, read top to bottom)."""
