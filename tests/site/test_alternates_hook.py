"""Absolute hreflang alternates (+ x-default): overrides/hooks/alternates.py and its logic,
alternates_hreflang.py."""
from alternates_hreflang import rewrite

HEAD = ('<head><link rel="canonical" href="https://x.io/s/zh-TW/a/">\n'
        '<link rel="alternate" href="./" hreflang="zh-TW">\n'
        '<link rel="alternate" href="../../a/" hreflang="en">\n</head>')


def test_links_become_absolute_with_x_default():
    out = rewrite(HEAD, "https://x.io/s/zh-TW/a/", "en")
    assert '<link rel=" alternate" href="https://x.io/s/zh-TW/a/" hreflang="zh-TW">' in out
    assert '<link rel=" alternate" href="https://x.io/s/a/" hreflang="en">' in out
    assert '<link rel=" alternate" href="https://x.io/s/a/" hreflang="x-default">' in out
    assert 'rel="alternate"' not in out  # Material's exact selector must not match any more
    assert out.count("hreflang=") == 3


def test_page_without_alternates_is_unchanged():
    page = "<head><title>t</title></head>"
    assert rewrite(page, "https://x.io/s/", "en") == page
