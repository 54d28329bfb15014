"""The lowering rule table: ``lowerings`` maps a ``Primitive`` to its rule, Jaxpr -> loop IR.

A rule is called as ``rule(g, ins, avals, **params)`` by ``lower.lower_jaxpr`` for each equation:
``g`` is the ``loopir.Graph`` being built, ``ins`` the nodes (``loopir.Node``) of the equation's
inputs, ``avals`` the abstract values of its outputs and ``params`` the equation's parameters. It
adds nodes to ``g`` and returns the node of the output, or a list of them (one per output).

This module imports nothing but the standard library, so that a module registering rules at
import (``lower.py`` for the first-order primitives, the ``functx/control`` files for theirs)
keeps the loop IR out of ``import functx``: rule bodies import ``loopir``/``lower`` when they run.
"""

from __future__ import annotations

lowerings: dict = {}  # Primitive -> rule(g, ins, avals, **params) -> Node | list[Node]

__all__ = ["lowerings"]
