"""The prompts a plate's "what to try" list suggests do what the tip says, run through the engine the
way the demo runs them (the second reader's review: plate 9's 「小貓坐在墊子上。小貓坐在」 gave 4 tokens and
an end-of-text token instead of the 16 the slider asks for, so it showed no speedup)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.speculative import speculative_generate
from lessons.plate09_decoding_faster import draft_verify

PLATES = Path(__file__).resolve().parents[3] / "docs" / "plates"
N_GRAM_TIP = {"en": re.compile(r'\*\*Switch to n-gram lookup\*\* with a prompt that repeats itself, for example "([^"]+)"'),
              "zh-TW": re.compile(r"\*\*切換到 n-gram 搜尋\*\*，用一段會重複的提示詞，例如「([^」]+)」")}
DEFAULTS = {c.name: c.default for c in draft_verify.CONTROLS}


def tip_prompt(lang: str) -> str:
    page = PLATES / ("09-decoding-faster.zh-TW.md" if lang == "zh-TW" else "09-decoding-faster.md")
    m = N_GRAM_TIP[lang].search(" ".join(page.read_text(encoding="utf-8").split()))
    assert m, "plate 9 no longer suggests a prompt for the n-gram lookup"
    return m.group(1)


def lookup_run(course, prompt: str):
    """The demo's n-gram run at its default settings (draft_verify: the same drafter, K, new tokens, eos)."""
    model, tok = course
    return speculative_generate(model, tok.encode(prompt), DEFAULTS["tokens"], draft_verify._drafter("ngram"),
                                DEFAULTS["k"], eos_id=tok.eos_id)


def shows_the_speedup(run, asked: int) -> bool:
    """Every new token the slider asks for (no early end of text), all guesses accepted, 3 or more per pass."""
    drafted = sum(len(r.drafted) for r in run.rounds)
    accepted = sum(r.accepted for r in run.rounds)
    return len(run.generated) == asked and drafted and accepted == drafted and run.tokens_per_pass >= 3


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_the_n_gram_tip_shows_the_speedup(course, lang):
    run = lookup_run(course, tip_prompt(lang))
    assert shows_the_speedup(run, DEFAULTS["tokens"]), (course[1].decode(run.generated), run.tokens_per_pass)


def test_the_old_tip_did_not():
    """The prompts the tips suggested before: the model ends the text after a few tokens."""
    import engine
    course = engine.load_course_model()
    for old in ("小貓坐在墊子上。小貓坐在", "The cat sat on the mat. The cat sat on the"):
        assert not shows_the_speedup(lookup_run(course, old), DEFAULTS["tokens"]), old
