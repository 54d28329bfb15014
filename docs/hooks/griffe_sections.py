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


_DIFFERS = "Differences from JAX:"


def normalize(text: str) -> str:
    """The docstring with a blank line above each section title, ``Example:`` spelled
    ``Examples:``, and a ``Differences from JAX: ...`` paragraph made a note box (a Material
    admonition) so that it stands out on the page."""
    out: list[str] = []
    in_differences = False
    for line in text.split("\n"):
        if in_differences:
            if line.strip() and not _SECTION.match(line):
                out.append("    " + line.strip())
                continue
            in_differences = False
        match = _SECTION.match(line)
        if match:
            if out and out[-1].strip():
                out.append("")
            title = _RENAME.get(match["title"], match["title"])
            line = f"{match['indent']}{title}:"
        elif line.startswith(_DIFFERS) and (not out or not out[-1].strip()):
            out += ['!!! note "Differences from JAX"', ""]
            line = "    " + line[len(_DIFFERS) :].strip()
            in_differences = True
        out.append(line)
    return "\n".join(out)


class FunctxSections(griffe.Extension):
    def on_instance(self, *, node, obj, agent, **kwargs) -> None:  # noqa: ARG002
        if obj.docstring is not None:
            obj.docstring.value = normalize(obj.docstring.value)
