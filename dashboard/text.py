"""User strings in Streamlit Markdown: shown as they are, never as links, images or formulas.

Streamlit reads the text of ``st.markdown``, ``st.caption``, the alert boxes, headings,
widget labels, tab and expander labels and metric labels as GitHub-flavoured Markdown
(with LaTeX between dollars, ``:color[...]`` directives and ``:material/...:`` icons). A
model named ``![x](https://host/pixel.png)`` would make every viewer's browser fetch that
address and ``[Verify your account](https://...)`` would become a link. Every string that
comes from a file, a file name, an error message or the URL goes through :func:`literal`
before it is put into Markdown.
"""

from __future__ import annotations

import re

__all__ = ["literal", "plain"]

#: Every ASCII punctuation character: CommonMark lets a backslash escape each of them, and
#: every Markdown construct (links, images, emphasis, code, HTML, autolinks, tables,
#: directives, math) starts with or needs one.
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")
#: Where GitHub's autolinks start: the URL and ``www.`` literals and the ``@`` of an
#: address. They are found in the parsed text, after escapes are undone, so escaping cannot
#: stop them; an invisible word joiner (U+2060) just before breaks each pattern.
_AUTOLINK = re.compile(r"(?i)(?=https?:|www\.|@)")
JOINER = "\u2060"


def literal(text: object) -> str:
    """Return ``text`` escaped so that Streamlit's Markdown shows it character for character.

    Parameters
    ----------
    text : object
        A user string (converted with ``str``): a model, class or file name, an error
        message, a value from the URL.

    Returns
    -------
    str
        The text with every ASCII punctuation character backslash-escaped, line breaks
        turned into spaces (a line break would start a new Markdown block) and an invisible
        word joiner before ``http:``, ``https:``, ``www.`` and ``@`` (Streamlit's Markdown
        turns those into links even when escaped).

    Examples
    --------
    >>> literal("[x](ftp://host/a.png)")
    '\\\\[x\\\\]\\\\(ftp\\\\:\\\\/\\\\/host\\\\/a\\\\.png\\\\)'
    >>> literal("model_a v2")
    'model\\\\_a v2'
    >>> literal("see https://host") == "see " + JOINER + "https\\\\:\\\\/\\\\/host"
    True
    """
    flat = _LINE_BREAKS.sub(" ", str(text))
    return _PUNCTUATION.sub(r"\\\1", _AUTOLINK.sub(JOINER, flat))


def plain(markdown: str) -> str:
    """Return what :func:`literal` escaped as the characters the reader sees (its inverse).

    Parameters
    ----------
    markdown : str
        Markdown source.

    Returns
    -------
    str
        The source with every backslash escape of ASCII punctuation undone and the word
        joiners of :func:`literal` removed.

    Examples
    --------
    >>> plain(literal("a_b.csv was not loaded"))
    'a_b.csv was not loaded'
    """
    return _ESCAPED.sub(r"\1", markdown).replace(JOINER, "")


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
