"""Comic panels: every plate opens with its illustrated panel, in the page's language.

A panel is a hand-written SVG in docs/assets/panels/, one per plate and language, named
``<plate>-en.svg`` and ``<plate>-zh-tw.svg`` (no dotted two-letter segment such as ``x.tw.svg``:
mkdocs-static-i18n would take it for a localized file and drop it). Each plate page, in both
languages, puts it right after its H1::

    <figure class="kv-panel" markdown="span">
    ![alt text](../assets/panels/01-next-token-en.svg){: width=600 height=340 }<figcaption>…</figcaption>
    </figure>

The caption sits on the image's line because a zh-TW paragraph may not break across lines
(tests/site/test_zh_tw.py), and the attributes use ``{: …}`` without quotes because zh-TW
prose may not hold ASCII double quotes.

What each SVG must be (``svg_problems``): well-formed XML with ``role="img"``, a ``<title>``
and a ``<desc>`` in its language (named by ``aria-labelledby``), no script, no bitmap, no
reference outside the file, small (``MAX_BYTES``), and every label readable on a phone: the
panel is drawn at ``PHONE_WIDTH`` CSS px on a 375 px screen, so a label of ``s`` user units
shows at ``s * PHONE_WIDTH / viewBox width`` px, which must reach ``MIN_PHONE_PX``.
The zh-TW panels' words follow the zh-TW checks the pages follow (Taiwan terms, the course's
terminology, full-width punctuation).
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from site_pages import DOCS, built, source
from test_page_terminology import page_findings
from test_zh_tw import conversion_changes, double_quotes, mainland_terms, middle_dots, mixed_slashes

PANELS = DOCS / "assets" / "panels"
PLATES = sorted(p.name[:-3] for p in (DOCS / "plates").glob("*.md") if not p.name.endswith(".zh-TW.md"))
LANGS = ("en", "zh-TW")
SUFFIX = {"en": "en", "zh-TW": "zh-tw"}
SVGS = sorted(PANELS.glob("*.svg"))

MAX_BYTES = 30_000  # hard cap per panel (they are drawn to about 3-8 KB)
# A 375 px phone shows Material's content 343 px wide (16 px padding each side): the panel's width.
PHONE_WIDTH = 343
MIN_PHONE_PX = 10.0
DEFAULT_FONT_PX = 16.0  # what a <text> without any font-size gets

SVG_NS = "{http://www.w3.org/2000/svg}"
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
# A half-width , : ; ! ? touching a Chinese character: zh-TW writes ，：；！？ there.
HALF_WIDTH_BY_HAN = re.compile(rf"{HAN.pattern}[,:;!?]|[,:;!?]{HAN.pattern}")
FIGURE = re.compile(
    r'\A<figure class="kv-panel" markdown="span">\n'
    r"!\[(?P<alt>[^\]\n]*)\]\((?P<src>[^)\s]+)\)\{:[^}\n]*\}"
    r"<figcaption>(?P<caption>[^<\n]*)</figcaption>\n</figure>\n")


def panel_name(plate: str, lang: str) -> str:
    return f"{plate}-{SUFFIX[lang]}.svg"


def after_h1(markdown: str) -> str:
    """The page from the first block after its H1 on."""
    m = re.search(r"^# .*\n\s*", markdown, re.MULTILINE)
    assert m, "the page has no H1"
    return markdown[m.end():]


def in_language(text: str, lang: str) -> bool:
    """zh-TW text holds Chinese; English text holds none."""
    return bool(HAN.search(text)) == (lang == "zh-TW")


# ------------------------------------------------------------------ the SVG files
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _style_rules(root: ET.Element) -> dict[str, float]:
    """font-size (px) per simple selector (``text``, ``.cls``) of the <style> elements."""
    rules = {}
    for style in root.iter(f"{SVG_NS}style"):
        for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", style.text or ""):
            size = re.search(r"font-size\s*:\s*([\d.]+)(?:px)?\s*(?:;|$)", body)
            if size:
                for selector in selectors.split(","):
                    rules[selector.strip()] = float(size.group(1))
    return rules


def _own_size(el: ET.Element, rules: dict[str, float]) -> float | None:
    """The font-size an element sets itself (inline style > class rule > tag rule > attribute)."""
    inline = re.search(r"font-size\s*:\s*([\d.]+)", el.get("style", ""))
    if inline:
        return float(inline.group(1))
    for cls in reversed(el.get("class", "").split()):
        if f".{cls}" in rules:
            return rules[f".{cls}"]
    if _local(el.tag) in rules:
        return rules[_local(el.tag)]
    attr = el.get("font-size")
    return float(re.match(r"[\d.]+", attr).group(0)) if attr else None


def font_sizes(root: ET.Element) -> list[tuple[float, str]]:
    """(font size in user units, the words) of every piece of text, inheriting from ancestors."""
    rules, found = _style_rules(root), []

    def walk(el: ET.Element, inherited: float) -> None:
        size = _own_size(el, rules) or inherited
        if _local(el.tag) in ("text", "tspan") and (el.text or "").strip():
            found.append((size, el.text.strip()))
        for child in el:
            if _local(child.tag) not in ("title", "desc", "style"):
                walk(child, size)

    walk(root, DEFAULT_FONT_PX)
    return found


def labels(root: ET.Element) -> list[str]:
    """The words drawn in the panel (each <text> with its <tspan>s)."""
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG_NS}text")]


def svg_problems(text: str, lang: str) -> list[str]:
    """Everything wrong with one panel's SVG source (empty when it is fine)."""
    problems = []
    if len(text.encode("utf-8")) > MAX_BYTES:
        problems.append(f"{len(text.encode('utf-8')):,} bytes > {MAX_BYTES:,}")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return problems + [f"not well-formed XML: {exc}"]
    if root.tag != f"{SVG_NS}svg":
        return problems + [f"root element is {root.tag}, not an SVG <svg>"]
    if root.get("role") != "img":
        problems.append('no role="img" on <svg>')
    if root.get("lang") != lang:
        problems.append(f"lang={root.get('lang')!r}, not {lang!r}")
    ids = {el.get("id"): el for el in root.iter() if el.get("id")}
    named = [ids.get(i) for i in root.get("aria-labelledby", "").split()]
    if sorted(_local(el.tag) for el in named if el is not None) != ["desc", "title"]:
        problems.append("aria-labelledby does not name the <title> and the <desc>")
    for tag in ("title", "desc"):
        el = root.find(f"{SVG_NS}{tag}")
        words = (el.text or "").strip() if el is not None else ""
        if not words:
            problems.append(f"no <{tag}>")
        elif not in_language(words, lang):
            problems.append(f"<{tag}> is not in {lang}: {words[:40]!r}")
    for el in root.iter():
        if _local(el.tag) in ("script", "foreignObject", "image", "iframe"):
            problems.append(f"<{_local(el.tag)}> element")
        for name, value in el.attrib.items():
            if _local(name) == "href" and not value.startswith("#"):
                problems.append(f"reference outside the file: {name}={value!r}")
            if name.startswith("on"):
                problems.append(f"event handler {name}")
    if re.search(r"url\((?!#)|@import|data:", text):
        problems.append("url(), @import or data: pointing outside the file")
    view = [float(v) for v in root.get("viewBox", "").replace(",", " ").split()]
    if len(view) != 4:
        return problems + ["no viewBox"]
    scale = PHONE_WIDTH / view[2]
    for size, words in font_sizes(root):
        if size * scale < MIN_PHONE_PX:
            problems.append(f"{words!r} is {size * scale:.1f} px on a phone (< {MIN_PHONE_PX})")
    drawn = labels(root)
    if not drawn:
        problems.append("no labels")
    for words in drawn:
        if lang == "zh-TW" and HALF_WIDTH_BY_HAN.search(words):
            problems.append(f"half-width punctuation beside Chinese: {words!r}")
    if lang == "zh-TW" and not any(HAN.search(w) for w in drawn):
        problems.append("no Chinese label in a zh-TW panel")
    if lang == "en" and any(HAN.search(w) for w in drawn):
        problems.append("Chinese in an English panel")
    return problems


def zh_words(text: str) -> str:
    """A zh-TW panel's words, one per line: title, description, labels."""
    root = ET.fromstring(text)
    return "\n".join([root.findtext(f"{SVG_NS}title", ""), root.findtext(f"{SVG_NS}desc", ""), *labels(root)])


def test_there_are_plates_and_panels():
    assert len(PLATES) >= 9 and SVGS


@pytest.mark.parametrize("path", SVGS, ids=[p.name for p in SVGS])
def test_panel_file_name_and_twin(path):
    """<plate>-en.svg / <plate>-zh-tw.svg, each with its twin in the other language."""
    m = re.fullmatch(r"(?P<plate>[0-9a-z-]+?)-(?P<lang>en|zh-tw)\.svg", path.name)
    assert m, f"{path.name}: not <plate>-en.svg or <plate>-zh-tw.svg"
    other = "zh-tw" if m["lang"] == "en" else "en"
    assert (PANELS / f"{m['plate']}-{other}.svg").is_file(), f"{path.name} has no {other} twin"


@pytest.mark.parametrize("path", SVGS, ids=[p.name for p in SVGS])
def test_panel_svg_is_accessible_safe_small_and_readable(path):
    lang = "en" if path.name.endswith("-en.svg") else "zh-TW"
    problems = svg_problems(path.read_text(encoding="utf-8"), lang)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


ZH_SVGS = [p for p in SVGS if p.name.endswith("-zh-tw.svg")]


@pytest.mark.parametrize("path", ZH_SVGS, ids=[p.name for p in ZH_SVGS])
def test_zh_panel_words_are_taiwan_usage(path):
    words = zh_words(path.read_text(encoding="utf-8"))
    found = (mainland_terms(words) + page_findings(words, "zh-TW") + middle_dots(words)
             + double_quotes(words) + mixed_slashes(words))
    assert not found, f"{path.name}:\n" + "\n".join(found)


@pytest.mark.parametrize("path", ZH_SVGS, ids=[p.name for p in ZH_SVGS])
def test_zh_panel_words_survive_s2twp(path):
    opencc = pytest.importorskip("opencc", reason="OpenCC is not installed: pip install -e '.[test]'")
    changes = conversion_changes(zh_words(path.read_text(encoding="utf-8")), opencc.OpenCC("s2twp").convert)
    assert not changes, "\n".join(f"line {n}: {a!r} -> {b!r}" for n, a, b in changes)


EN_SVGS = [p for p in SVGS if p.name.endswith("-en.svg")]


@pytest.mark.parametrize("path", EN_SVGS, ids=[p.name for p in EN_SVGS])
def test_en_panel_words_use_the_terms(path):
    root = ET.fromstring(path.read_text(encoding="utf-8"))
    words = "\n".join([root.findtext(f"{SVG_NS}title", ""), root.findtext(f"{SVG_NS}desc", ""), *labels(root)])
    assert not page_findings(words, "en")


# A well-formed panel and faults planted in it, each with the problem it must raise.
GOOD = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 600 340" role="img" lang="{lang}" '
        'aria-labelledby="t d"><title id="t">{words}</title><desc id="d">{words}</desc>'
        '<style>.l{{font-size:22px}}</style><text class="l" x="9" y="30">{words}</text>{extra}</svg>')
WORDS = {"en": "The cabinet", "zh-TW": "檔案櫃"}
PLANTED = [
    ("en", {"extra": '<text x="9" y="60">default 16 px</text>'}, "on a phone"),
    ("en", {"extra": '<text font-size="14" x="9" y="60">small</text>'}, "on a phone"),
    ("en", {"extra": '<g style="font-size:12px"><text x="9" y="60">inherited</text></g>'}, "on a phone"),
    ("en", {"extra": '<script>alert(1)</script>'}, "<script>"),
    ("en", {"extra": '<image href="x.png" width="9" height="9"/>'}, "<image>"),
    ("en", {"extra": '<use href="https://example.com/a.svg#x"/>'}, "outside the file"),
    ("en", {"extra": '<rect fill="url(https://example.com/p)" width="1" height="1"/>'}, "url()"),
    ("en", {"extra": '<rect onclick="x()" width="1" height="1"/>'}, "event handler"),
    ("en", {"extra": "<rect width='1' height='1'>"}, "not well-formed"),
    ("en", {"extra": "<!--" + "x" * MAX_BYTES + "-->"}, "bytes >"),
    ("zh-TW", {"words": "The cabinet"}, "is not in zh-TW"),
    ("en", {"words": "檔案櫃"}, "is not in en"),
    ("zh-TW", {"extra": '<text class="l" x="9" y="60">快取:詞元</text>'}, "half-width punctuation"),
]


@pytest.mark.parametrize("lang", LANGS)
def test_a_good_sample_passes(lang):
    assert svg_problems(GOOD.format(lang=lang, words=WORDS[lang], extra=""), lang) == []


@pytest.mark.parametrize(("lang", "fault", "problem"), PLANTED, ids=[p for *_, p in PLANTED])
def test_the_checks_catch_planted_faults(lang, fault, problem):
    sample = GOOD.format(**{"lang": lang, "words": WORDS[lang], "extra": "", **fault})
    found = svg_problems(sample, lang)
    assert any(problem in p for p in found), f"{problem!r} not in {found}"


def test_the_lang_and_labelledby_checks_bite():
    bad = GOOD.format(lang="en", words="The cabinet", extra="").replace('aria-labelledby="t d"', "")
    assert any("aria-labelledby" in p for p in svg_problems(bad, "en"))
    assert any("lang=" in p for p in svg_problems(bad.replace('lang="en"', 'lang="fr"'), "en"))
    assert any('role="img"' in p for p in svg_problems(bad.replace('role="img"', ""), "en"))


# ------------------------------------------------------------------ the pages
CASES = [(plate, lang) for plate in PLATES for lang in LANGS]
IDS = [f"{plate}-{lang}" for plate, lang in CASES]


@pytest.mark.parametrize(("plate", "lang"), CASES, ids=IDS)
def test_plate_opens_with_its_panel(plate, lang):
    """Right after the H1: the figure with this plate's panel in this language, alt and caption."""
    page = source(f"plates/{plate}", lang)
    m = FIGURE.match(after_h1(page.read_text(encoding="utf-8")))
    assert m, f"{page.name}: the first block after the H1 is not the kv-panel figure"
    assert m["src"] == f"../assets/panels/{panel_name(plate, lang)}"
    assert (page.parent / m["src"]).resolve().is_file()
    for what in ("alt", "caption"):
        assert m[what].strip(), f"{page.name}: empty {what}"
        assert in_language(m[what], lang), f"{page.name}: {what} not in {lang}: {m[what][:40]!r}"


def test_the_figure_pattern_bites():
    good = ('# T\n\n<figure class="kv-panel" markdown="span">\n![A panel.](../assets/panels/x-en.svg)'
            "{: width=600 height=340 }<figcaption>Cap.</figcaption>\n</figure>\n\nText.\n")
    assert FIGURE.match(after_h1(good))
    assert not FIGURE.match(after_h1(good.replace("![A panel.]", "![]").replace("# T\n\n", "# T\n\nFirst.\n\n")))


@pytest.mark.parametrize(("plate", "lang"), CASES, ids=IDS)
def test_built_page_shows_its_panel(built_site, plate, lang):
    """The built page's first element after the H1 is the figure, and its image resolves, from
    the page's own URL, to this language's SVG in the site (zh-TW pages live under /zh-TW/)."""
    page = built(built_site, f"plates/{plate}", lang)
    html = page.read_text(encoding="utf-8")
    m = re.search(r"</h1>\s*<figure class=\"kv-panel\">\s*<img (?P<attrs>[^>]*)>", html)
    assert m, f"{page}: no kv-panel figure right after the H1"
    src = re.search(r'\bsrc="([^"]+)"', m["attrs"])[1]
    alt = re.search(r'\balt="([^"]*)"', m["attrs"])[1]
    target = (page.parent / src).resolve()
    assert target.is_file(), f"{src} does not resolve from {page}"
    assert target.name == panel_name(plate, lang)
    assert alt.strip() and in_language(alt, lang)
