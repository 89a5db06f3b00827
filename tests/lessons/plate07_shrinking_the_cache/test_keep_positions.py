"""keep_positions: the kept positions follow each policy's rule, and the quality numbers agree
with the course model run here through its own attention mask (not through the caches)."""
import re
from dataclasses import replace

import numpy as np
import pytest

from engine import Transformer
from engine.caches.evicting import HeavyHitterKVCache
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.plate07_shrinking_the_cache.keep_positions import (CONTINUE, POLICIES, TEXT_TOKENS, full_run, kl_per_position, policy_run,
                                   sink_share, text_ids)

from lesson_checks import check_both_languages, check_describe, column, number, numbers

WINDOW, SINKS, H2O = (POLICIES[p]["en"] for p in ("window", "sinks", "h2o"))


def kept(out) -> list[list[int]]:
    """Positions per layer, read from the kept figure's table."""
    return [[int(p) for p in c.split(", ")] for c in column(out["figures"][0]["table"], "positions kept")]


def summary(out) -> dict:
    tbl = out["tables"][0]
    return {r[0]: dict(zip(tbl["columns"], r)) for r in tbl["rows"]}


def test_defaults_both_languages(course):
    check_describe("keep_positions")
    outs = check_both_languages("keep_positions")
    assert len(outs["en"]["figures"][1]["table"]["rows"]) == TEXT_TOKENS


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("text", ["en", "zh-TW"])
def test_every_policy_runs_on_both_texts(policy, text, course):
    check_both_languages("keep_positions", {"policy": policy, "text": text, "budget": 24})


@pytest.mark.parametrize("budget,sinks", [(24, 1), (32, 4), (48, 8)])
def test_window_and_sinks_keep_what_their_rule_says(budget, sinks, course):
    n = TEXT_TOKENS
    window = kept(registry.run("keep_positions", {"policy": "window", "budget": budget}, "en"))
    assert all(k == list(range(n - budget, n)) for k in window)
    sink = kept(registry.run("keep_positions", {"policy": "sinks", "budget": budget, "sinks": sinks}, "en"))
    assert all(k == list(range(sinks)) + list(range(n - budget + sinks, n)) for k in sink)


@pytest.mark.parametrize("budget", [24, 40, 56])
def test_heavy_hitters_keep_the_budget_with_the_newest_half(budget, course):
    out = registry.run("keep_positions", {"policy": "h2o", "budget": budget}, "en")
    newest = set(range(TEXT_TOKENS - budget // 2, TEXT_TOKENS))
    for k in kept(out):
        assert len(k) == budget and newest <= set(k)
    assert len({tuple(k) for k in kept(out)}) > 1  # each layer picks its own heavy hitters


@pytest.mark.parametrize("budget", [24, 40])
def test_window_quality_matches_the_model_under_its_own_window_mask(budget, course):
    model, tok = course
    ids = list(text_ids("en"))
    full = model.forward(ids)
    windowed = Transformer(replace(model.config, sliding_window=budget), model.weights).forward(ids)
    kl = kl_per_position(full, windowed)
    out = registry.run("keep_positions", {"policy": "window", "budget": budget}, "en")
    row = summary(out)[WINDOW]
    assert number(row[f"mean KL after the first {budget} positions"]) == pytest.approx(kl[budget:].mean(), rel=5e-3)
    same = np.mean(full[budget:].argmax(-1) == windowed[budget:].argmax(-1))
    assert number(row["same top-1 token as the full cache"]) == pytest.approx(same, abs=1e-3)
    assert numbers(out["figures"][1]["table"], WINDOW)[:budget] == [0] * budget  # nothing evicted yet


def test_cache_sizes_are_the_budget_against_the_whole_text(course):
    model, _tok = course
    c = model.config
    per_token = 2 * c.n_layers * c.n_kv_heads * c.head_dim * 4
    out = summary(registry.run("keep_positions", {"policy": "h2o", "budget": 32}, "en"))
    assert out[WINDOW]["cache size"] == out[H2O]["cache size"] == f"{32 * per_token // 1024} KiB"
    assert out["full cache"]["cache size"] == f"{(TEXT_TOKENS + CONTINUE) * per_token // 1024} KiB"


def test_sinks_always_leave_room_for_a_window_and_bad_values_are_refused(course):
    from lessons.plate07_shrinking_the_cache.keep_positions import CONTROLS

    c = {ctl.name: ctl for ctl in CONTROLS}
    assert c["sinks"].max < c["budget"].min  # every pair of slider values leaves a window
    for lang in ("en", "zh-TW"):
        for values in ({"sinks": 9}, {"budget": 8}, {"policy": "lru"}, {"text": "fr"}):
            with pytest.raises(LessonInputError):
                registry.run("keep_positions", values, lang)


def test_kl_is_zero_for_the_same_logits_and_matches_a_hand_computation():
    a = np.array([[0.0, 0.0], [np.log(3.0), 0.0]])
    b = np.array([[0.0, 0.0], [0.0, 0.0]])
    # row 2: p = (3/4, 1/4), q = (1/2, 1/2): 3/4 ln(3/2) + 1/4 ln(1/2)
    np.testing.assert_allclose(kl_per_position(a, b), [0.0, 0.75 * np.log(1.5) + 0.25 * np.log(0.5)])
    np.testing.assert_allclose(kl_per_position(a, a), [0.0, 0.0])


def test_sink_share_on_a_hand_made_pattern():
    attn = np.zeros((2, 4, 4))  # [H, N, N]: query q spreads evenly over 0..q, except that
    for q in range(4):
        attn[:, q, : q + 1] = 1 / (q + 1)
    attn[0, 3] = [0.7, 0.1, 0.1, 0.1]  # head 0 of the last query pours 70% onto position 0
    (share, even), = sink_share([attn], first=1, after=2)
    assert even == pytest.approx((1 / 3 + 1 / 4) / 2)
    assert share == pytest.approx((1 / 3 + (0.7 + 0.25) / 2) / 2)


@pytest.mark.parametrize("budget", [24, 40])
def test_starting_from_the_reference_changes_nothing(budget, course):
    """policy_run takes the first ``budget`` positions from the full run; the same caches fed
    the whole text from scratch (windows: the model under its own mask; H2O: token by token)."""
    model, _tok = course
    ids = list(text_ids("en"))
    full = full_run("en")
    for window, sinks, policy in ((budget, 0, "window"), (budget - 4, 4, "sinks")):
        masked = Transformer(replace(model.config, sliding_window=window, attention_sinks=sinks), model.weights)
        np.testing.assert_allclose(policy_run(policy, ids, budget, 4, full)[0], masked.forward(ids), rtol=0, atol=1e-4)
    cache = HeavyHitterKVCache(model.config, budget=budget, recent=budget // 2)
    scratch = np.concatenate([model.forward([i], cache=cache) for i in ids])
    got = policy_run("h2o", ids, budget, 4, full)
    np.testing.assert_allclose(got[0], scratch, rtol=0, atol=1e-4)
    assert [list(k) for k in got[1]] == [list(cache.positions(l)) for l in range(model.config.n_layers)]


def look(out) -> dict:
    """The last token's attention per position, one list per cache, from the figure's table."""
    tbl = out["figures"][2]["table"]
    return {name: numbers(tbl, name) for name in tbl["columns"][2:]}


@pytest.mark.parametrize("budget,sinks", [(24, 1), (32, 4), (48, 8)])
def test_the_last_tokens_attention_with_and_without_the_sinks(budget, sinks, course):
    """Where the text's last token looks, per position: the model under each mask, run here
    with a trace (the mean of heads and layers of its last attention row), is what the figure
    shows; the window leaves the first positions nothing, the sinks keep them in view."""
    model, _tok = course
    ids = list(text_ids("en"))
    out = registry.run("keep_positions", {"policy": "sinks", "budget": budget, "sinks": sinks}, "en")
    got = look(out)
    for name, window, s in (("full cache", None, 0), (WINDOW, budget, 0), (SINKS, budget - sinks, sinks)):
        masked = Transformer(replace(model.config, sliding_window=window, attention_sinks=s), model.weights)
        _logits, tr = masked.forward(ids, trace=True)
        want = np.mean([a[:, -1, :].mean(axis=0) for a in tr.attn], axis=0)  # [N]
        assert got[name] == pytest.approx(want, abs=1e-3), name  # 3 significant digits on the page
        assert sum(got[name]) == pytest.approx(1, abs=0.01)  # each row of weights sums to 1
    n = TEXT_TOKENS
    assert all(v == 0 for v in got[WINDOW][: n - budget])  # nothing before the window is in view
    assert all(v > 0 for v in got[SINKS][:sinks]) and all(v == 0 for v in got[SINKS][sinks : n - budget + sinks])
    assert f"the first {sinks} positions" in out["notes"][1]


def test_the_heavy_hitters_look_where_their_cache_still_holds(course):
    out = registry.run("keep_positions", {"policy": "h2o", "budget": 32}, "en")
    kept_last = set(kept(out)[-1])
    got = look(out)[H2O]
    assert sum(got) == pytest.approx(1, abs=0.01)
    # the last token read what each layer held before its step evicted one more position: every
    # position kept after it, plus at most one per layer; the rest of the text gets nothing
    held_anywhere = set().union(*map(set, kept(out)))
    assert all(got[p] > 0 for p in kept_last)
    assert sum(v > 0 for v in got) <= len(held_anywhere) + len(kept(out)) < TEXT_TOKENS


# --------------------------------------------------------------------------- the second reader's review (plate 7)


def even_share_reads_as_per_key(note: str) -> bool:
    """「平均分給看得到的每個 key 的話是 8.57%」 read as 8.57% for each key: the share is the first S positions'."""
    return bool(re.search(r"每個 key 的話是|would give \d", note))


@pytest.mark.parametrize("sinks", [1, 4])
def test_the_even_share_is_the_first_positions_together(course, sinks):
    zh, en = (registry.run("keep_positions", {"sinks": sinks}, lang)["notes"][0] for lang in ("zh-TW", "en"))
    assert f"這 {sinks} 個位置合起來會拿到" in zh and f"these {sinks} positions would get" in en
    assert not even_share_reads_as_per_key(zh) and not even_share_reads_as_per_key(en)
    assert even_share_reads_as_per_key("用完整快取時……；平均分給看得到的每個 key 的話是 8.57%。")


@pytest.mark.parametrize("text", ["en", "zh-TW"])
def test_a_continuation_in_the_other_language_is_explained(course, text):
    """The Chinese text's continuation read 「果。The cat sat」 with no word of why: the small model switches
    language, the full cache too, which a note now says (in both interface languages)."""
    for lang, said in (("zh-TW", "常常寫著寫著就換成"), ("en", "it often switches to")):
        out = registry.run("keep_positions", {"text": text}, lang)
        conts = column(out["tables"][0], "貪婪解碼接著寫" if lang == "zh-TW" else "greedy continuation")
        other = re.compile("[A-Za-z]" if text == "zh-TW" else "[\u4e00-\u9fff]")
        assert any(other.search(c) for c in conts), conts  # the demo's texts do switch (else the note is moot)
        assert any(said in n for n in out["notes"]), out["notes"]


def test_plate_7_names_the_budget_control_by_its_label():
    """The tip said 「預算」 for the slider labelled 每層保留的位置數: a tip names a control as the demo labels it."""
    from pathlib import Path
    from lessons.plate07_shrinking_the_cache.keep_positions import CONTROLS
    budget = next(c for c in CONTROLS if c.name == "budget")
    docs = Path(__file__).resolve().parents[3] / "docs" / "plates"
    for lang, page in (("zh-TW", "07-shrinking-the-cache.zh-TW.md"), ("en", "07-shrinking-the-cache.md")):
        text = (docs / page).read_text(encoding="utf-8")
        label = budget.label[lang]
        assert f"- **{label}" in text or f"- **{label[0].upper()}{label[1:]}" in text, label
        assert "**預算。**" not in text and "**Budget.**" not in text
