"""HTML to Markdown through BeautifulSoup and ``markdownify`` (the ``html`` extra).

Before conversion the page loses everything that is not its text: ``script``, ``style``,
``noscript``, ``template``, forms, embedded frames and graphics, the site's ``nav``,
``aside``, ``footer`` and ``header`` (a header inside an article stays: it holds the
article's title), hidden elements (``hidden``, ``aria-hidden="true"``, ``display: none``
or ``visibility: hidden``), and boilerplate marked by an ARIA landmark role or a class or
id such as ``navbar``, ``sidebar``, ``cookie-banner`` or ``site-footer`` (unless it holds
most of the page's text). ``<h1>``-``<h6>`` become ``#`` headings for the heading-aware
chunker; links keep their text, images are dropped.

Only the body is converted. The title is ``<title>``, else the first ``<h1>``; the url is
``<link rel="canonical">`` when it is an absolute http(s) URL.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

from ..errors import InvalidDocumentError
from .base import LoadedText, MissingExtraError, clean_text, clean_title, missing_extra_message

__all__ = ["decode_html", "load_html"]

_DROP_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "form",
    "button",
    "select",
    "textarea",
    "input",
    "iframe",
    "object",
    "embed",
    "svg",
    "canvas",
    "nav",
    "aside",
    "footer",
    "dialog",
)
_SECTIONING = ("article", "main", "section")
_BOILERPLATE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "complementary", "search", "menubar", "dialog"}
)
_BOILERPLATE_WORDS = frozenset(
    {
        "nav",
        "navbar",
        "navigation",
        "menu",
        "sidebar",
        "footer",
        "cookie",
        "cookies",
        "consent",
        "breadcrumb",
        "breadcrumbs",
        "advert",
        "advertisement",
        "ads",
        "share",
        "social",
        "skiplink",
        "newsletter",
    }
)
_WORD_SPLIT = re.compile(r"[\s_-]+")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# The WHATWG encoding standard reads these labels as windows-1252.
_AS_CP1252 = frozenset({"latin_1", "iso8859_1", "ascii", "cp1252"})
_MAX_URL_CHARS = 2048
# markdownify recurses about three frames per element level: below this depth an element
# is converted as plain lines of text instead.
_MAX_DEPTH = 100
# A run of more blanks than this is shortened before conversion (see _bound_blanks).
_MAX_BLANK_RUN = 256
_LONG_BLANKS = re.compile(rf"[ \t\r\n]{{{_MAX_BLANK_RUN + 1},}}")
# Boilerplate holding more than this share of the page's text is kept: it is the page.
_MOST_OF_PAGE = 0.5


def _libraries() -> tuple[Any, Any]:
    try:
        # lazy: bs4 and markdownify are the optional 'html' extra, imported on use
        import bs4
        import markdownify
    except ImportError as exc:
        msg = missing_extra_message("html", exc)
        raise MissingExtraError(msg) from exc
    return bs4, markdownify


def load_html(data: bytes, name: str) -> LoadedText:
    """The page's main text as Markdown, with its title and canonical url."""
    bs4, markdownify = _libraries()
    html = decode_html(data, name)
    if "\x00" in html:
        msg = f"cannot read HTML {name!r}: it contains NUL bytes (binary?); pass an HTML file"
        raise InvalidDocumentError(msg)
    try:
        soup = bs4.BeautifulSoup(html, "html.parser")
        title = _title(soup)
        url = _canonical(soup)
        body = soup.body or soup
        for head in body.find_all("head"):
            head.decompose()
        _drop_clutter(body, bs4)
        _flatten_deep(body, bs4.Tag)
        _bound_blanks(body, bs4)
        converter = markdownify.MarkdownConverter(
            heading_style="ATX",
            bullets="-",
            strip=["a", "img"],
            escape_asterisks=False,
            escape_underscores=False,
            escape_misc=False,
        )
        text = clean_text(converter.convert_soup(body))
    except RecursionError:
        msg = f"cannot read HTML {name!r}: its elements are nested too deeply to convert"
        raise InvalidDocumentError(msg) from None
    return LoadedText(text=text, title=title, url=url, type="html")


def decode_html(data: bytes, name: str) -> str:
    """``data`` decoded by its byte order mark, else its ``<meta charset>``, else as
    UTF-8, else as windows-1252 (what browsers assume for an undeclared page)."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, "replace")
    declared = _META_CHARSET.search(data[:4096])
    if declared:
        try:
            encoding = codecs.lookup(declared.group(1).decode("ascii")).name
        except LookupError:
            encoding = "utf-8"
        if encoding.replace("-", "_") in _AS_CP1252:
            encoding = "cp1252"
        elif encoding.startswith(("utf_16", "utf-16", "utf_32", "utf-32")):
            encoding = "utf-8"  # a page that can declare it in ASCII is not UTF-16
        return data.decode(encoding, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def _title(soup: Any) -> str | None:
    for tag in (soup.title, soup.find("h1")):
        if tag is not None and (title := clean_title(tag.get_text(" "))):
            return title
    return None


def _canonical(soup: Any) -> str | None:
    for link in soup.find_all("link", href=True):
        rel = link.get("rel") or []
        rels = rel.split() if isinstance(rel, str) else rel
        if "canonical" not in [r.lower() for r in rels]:
            continue
        href = str(link["href"]).strip()
        if (
            re.match(r"https?://[^\s/?#]+", href, re.IGNORECASE)
            and len(href) <= _MAX_URL_CHARS
            and not re.search(r"[\x00-\x20\x7f]", href)
        ):
            return href
        return None
    return None


def _drop_clutter(body: Any, bs4: Any) -> None:
    """Remove the clutter (module docstring) in walks over the tree that never revisit a
    subtree: first the tags dropped by name, site headers and hidden elements; then
    boilerplate holding at most :data:`_MOST_OF_PAGE` of the text that is left."""
    drop: list[Any] = []
    stack: list[tuple[Any, bool]] = [(body, False)]
    while stack:
        tag, in_section = stack.pop()
        for child in tag.contents:
            if not isinstance(child, bs4.Tag):
                continue
            if (
                child.name in _DROP_TAGS
                or (child.name == "header" and not in_section)
                or _hidden(child)
            ):
                drop.append(child)
            else:
                stack.append((child, in_section or child.name in _SECTIONING))
    for tag in drop:
        tag.decompose()
    sizes = _text_sizes(body, bs4)
    total = sizes.get(id(body), 0) or 1
    drop = []
    walk: list[Any] = [body]
    while walk:
        tag = walk.pop()
        for child in tag.contents:
            if not isinstance(child, bs4.Tag):
                continue
            if _boilerplate(child) and sizes.get(id(child), 0) / total <= _MOST_OF_PAGE:
                drop.append(child)
            else:
                walk.append(child)
    for tag in drop:
        tag.decompose()


def _text_sizes(body: Any, bs4: Any) -> dict[int, int]:
    """The characters of text (stripped strings, one separator each) under every tag,
    by ``id``, computed bottom-up in one walk."""
    plain = (bs4.NavigableString, bs4.CData)
    sizes: dict[int, int] = {}
    order: list[Any] = []
    stack: list[Any] = [body]
    while stack:
        tag = stack.pop()
        order.append(tag)
        stack.extend(child for child in tag.contents if isinstance(child, bs4.Tag))
    for tag in reversed(order):  # children before their parent
        size = 0
        for child in tag.contents:
            if isinstance(child, bs4.Tag):
                size += sizes[id(child)]
            elif type(child) in plain and (text := child.strip()):
                size += len(text) + 1
        sizes[id(tag)] = size
    return sizes


def _bound_blanks(body: Any, bs4: Any) -> None:
    """Shorten every run of more than :data:`_MAX_BLANK_RUN` blanks: to that many inside
    ``<pre>`` (where blanks are layout), to one elsewhere (where a browser shows one).
    markdownify's own expressions take time quadratic in the length of such a run."""
    for string in body.find_all(string=_LONG_BLANKS.search):
        if type(string) not in (bs4.NavigableString, bs4.CData):
            continue
        if string.find_parent("pre") is not None:
            shorter = _LONG_BLANKS.sub(lambda m: m.group()[:_MAX_BLANK_RUN], string)
        else:
            shorter = _LONG_BLANKS.sub(lambda m: "\n" if "\n" in m.group() else " ", string)
        string.replace_with(type(string)(shorter))


def _flatten_deep(body: Any, tag_type: type) -> None:
    """Replace the content of each element at depth :data:`_MAX_DEPTH` by its text, one
    line per string, so the conversion never recurses deeper (bs4 itself walks and
    parses without recursion)."""
    stack: list[tuple[Any, int]] = [(body, 0)]
    deep: list[Any] = []
    while stack:
        tag, depth = stack.pop()
        if depth >= _MAX_DEPTH:
            deep.append(tag)
            continue
        stack.extend((child, depth + 1) for child in tag.children if isinstance(child, tag_type))
    for tag in deep:
        lines = [" ".join(text.split()) for text in tag.stripped_strings]
        tag.clear()
        tag.append("\n\n".join(line for line in lines if line))


def _hidden(tag: Any) -> bool:
    return bool(
        tag.has_attr("hidden")
        or str(tag.get("aria-hidden", "")).lower() == "true"
        or _HIDDEN_STYLE.search(str(tag.get("style", "")))
    )


def _boilerplate(tag: Any) -> bool:
    if tag.name in ("body", "html", "main", "article"):
        return False
    if str(tag.get("role", "")).lower() in _BOILERPLATE_ROLES:
        return True
    classes = tag.get("class") or []
    names = [*([classes] if isinstance(classes, str) else classes), str(tag.get("id", ""))]
    return any(
        word.lower() in _BOILERPLATE_WORDS for name in names for word in _WORD_SPLIT.split(name)
    )
