"""A griffe extension (named in mkdocs.yml's mkdocstrings options): functx's docstrings as the
Google-style parser reads them.

functx writes its sections as ``Arguments:`` / ``Returns:`` / ``Example:`` blocks, often without a
blank line between them (what tests/test_docstrings*.py check). Griffe's Google parser skips a
section title that has no blank line above it, and knows ``Examples:`` but not ``Example:``; left
alone, the doctest lines would render as Markdown paragraphs. This extension inserts the blank
line and spells the title as griffe knows it, in the loaded docstring only (functx's source and
``__doc__`` are unchanged).
"""

from __future__ import annotations

import re

import griffe

_SECTION = re.compile(
    r"^(?P<indent>\s*)(?P<title>Arguments|Args|Returns|Raises|Yields|Example|Examples|Note|Notes)"
    r":\s*$"
)
_RENAME = {"Example": "Examples"}


def normalize(text: str) -> str:
    """The docstring with a blank line above each section title and ``Example:`` spelled
    ``Examples:``."""
    out: list[str] = []
    for line in text.split("\n"):
        match = _SECTION.match(line)
        if match:
            if out and out[-1].strip():
                out.append("")
            title = _RENAME.get(match["title"], match["title"])
            line = f"{match['indent']}{title}:"
        out.append(line)
    return "\n".join(out)


class FunctxSections(griffe.Extension):
    def on_instance(self, *, node, obj, agent, **kwargs) -> None:  # noqa: ARG002
        if obj.docstring is not None:
            obj.docstring.value = normalize(obj.docstring.value)
