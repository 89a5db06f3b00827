"""paging: every number from the engine's allocations, the three servers in the same memory,
Llama 3 8B beside it from the formula, clear bilingual errors."""
from __future__ import annotations

import json
import re

import pytest

from lessons.plate08_serving_the_cache import paging
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.plate08_serving_the_cache.paging import CONTROLS

from lesson_checks import check_both_languages, check_describe, check_output, column, number, numbers, records, run_json_ok

DEFAULTS = {c.name: c.default for c in CONTROLS}
GIB = 1024**3
# the memory table's columns of each server, as the English page reads them
RESERVED = {"block_map_paged": "(b) paging: reserved (B)", "block_map_shared": "(c) paging + prefix sharing: reserved (B)"}
CONTIGUOUS_RESERVED = "(a) contiguous: reserved (B)"


def _slot(cfg) -> int:
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, every layer, float32


def _fig(out, key):
    return next(f for f in out["figures"] if f["key"] == key)


def _fit(out) -> dict:
    """server -> {column: cell} of the 'requests running at once' table."""
    return {r["server"]: r for r in records(_fig(out, "fit")["table"])}


@pytest.fixture(scope="module")
def default_en(course):
    return check_output(registry.run("paging", None, "en"))


def test_defaults_both_languages(course):
    check_describe("paging")
    check_both_languages("paging")


def test_defaults_tell_the_story_and_stay_cheap(default_en):
    """At the defaults the three servers differ (2 / 3 / 4 at once is what the plate describes)
    while the model writes few enough tokens for the warm-update budget."""
    fit = _fit(default_en)
    at_once = [number(fit[s]["requests at once (most)"]) for s in ("(a) contiguous", "(b) paging", "(c) paging + prefix sharing")]
    assert at_once[0] < at_once[1] < at_once[2] == DEFAULTS["requests"]
    assert sum(numbers(default_en["tables"][0], "answer tokens")) <= 30


@pytest.mark.parametrize("key", ["block_map_paged", "block_map_shared"])
def test_block_map_cells_are_the_blocks_lent(course, default_en, key):
    """Each step's coloured cells are the blocks the pool lent (its refcounts), and the memory
    figure's paged bytes are those blocks."""
    cfg = course[0].config
    z = _fig(default_en, key)["figure"]["data"][0]["z"]
    reserved = column(_fig(default_en, "memory")["table"], RESERVED[key])
    assert len(z) == len([c for c in reserved if c])  # one map row per step the server ran
    labels = _fig(default_en, key)["figure"]["data"][0]["colorbar"]["ticktext"]
    for row, cell in zip(z, reserved):
        assert sum(labels[c] != "free" for c in row) * DEFAULTS["block"] * _slot(cfg) == number(cell)


def test_block_map_table_counts_every_block_once(default_en):
    """Per step: the blocks each holder has plus the free ones make the whole pool."""
    n_blocks = DEFAULTS["pool"] // DEFAULTS["block"]
    for r in records(_fig(default_en, "block_map_shared")["table"]):
        held = [int(part.rsplit(": ", 1)[1]) for part in r["blocks held (shared ones once)"].split(", ")]
        assert sum(held) + number(r["free blocks"]) == n_blocks


def test_contiguous_reserves_prompt_plus_longest_answer(course, default_en):
    cfg = course[0].config
    reserve = (DEFAULTS["prompt"] + DEFAULTS["answer"]) * _slot(cfg)
    memory = DEFAULTS["pool"] * _slot(cfg)
    reserved = numbers(_fig(default_en, "memory")["table"], CONTIGUOUS_RESERVED)
    assert reserved and all(b % reserve == 0 and b <= memory for b in reserved)
    assert number(_fit(default_en)["(a) contiguous"]["requests at once (most)"]) == memory // reserve


def test_llama3_8b_fits_follow_the_formula(default_en):
    """Contiguous on an 80 GB GPU: (81,559 MiB, the memory an H100 80GB HBM3 reports, - 8,030,261,248
    fp16 weights) / (32 x (prompt + answer) tokens x 128 KiB); 32 = 8,192 / 256 context windows,
    the published counts of Llama 3 8B."""
    per = 32 * (DEFAULTS["prompt"] + DEFAULTS["answer"]) * 128 * 1024
    expect = (81_559 * 2**20 - 8_030_261_248 * 2) // per
    rows = {r["GPU"]: r for r in records(_fig(default_en, "real_shape")["table"])}
    h100, h200 = rows["NVIDIA H100 SXM (80 GB)"], rows["NVIDIA H200 SXM (141 GB)"]
    fits = [number(h100[f"{s}: fit"]) for s in ("(a) contiguous", "(b) paging", "(c) paging + prefix sharing")]
    assert fits[0] == expect
    assert fits[0] < fits[1] < fits[2]  # contiguous < paging < sharing
    assert fits[0] < number(h200["(a) contiguous: fit"])  # the 141 GB GPU holds more


def test_parallel_samples_copy_the_shared_partial_block_once_each(course):
    out = registry.run("paging", {"mix": "parallel", "requests": 3, "prompt": 10, "block": 4, "pool": 512}, "en")
    assert "copy-on-write copied 3 block(s)" in out["notes"][1]


def test_a_prompt_of_whole_blocks_copies_nothing(course):
    """The page's suggestion: a prompt length that is a multiple of the block size leaves no
    shared block partly filled, so nothing is copied on write."""
    out = registry.run("paging", {"mix": "parallel", "requests": 3, "prompt": 12, "block": 4, "pool": 512}, "en")
    assert "copy-on-write copied no block: the shared prefix fills whole blocks (12 tokens, 3 blocks of 4)" in out["notes"][1]


def test_a_small_memory_preempts_and_the_answers_stay_the_same(course):
    """The page's other suggestion: shrink the memory until the notes report preemptions; the
    answers the requests table shows do not change."""
    answers = "answer (course model, run c)"
    roomy = registry.run("paging", {"pool": 512}, "en")
    tight = registry.run("paging", {"pool": 24}, "en")
    preempted = [number(r["preemptions"]) for r in records(_fig(tight, "fit")["table"])]
    assert preempted[1] > 0 and preempted[2] > 0 and "Preemptions: 0 in (b), 0 in (c)" in roomy["notes"][1]
    assert column(tight["tables"][0], answers) == column(roomy["tables"][0], answers)


def test_distinct_prompts_share_nothing(course):
    out = registry.run("paging", {"mix": "distinct"}, "en")
    rows = {r["server"]: r for r in records(_fig(out, "waste")["table"])}
    assert {k: v for k, v in rows["(b) paging"].items() if k != "server"} == \
        {k: v for k, v in rows["(c) paging + prefix sharing"].items() if k != "server"}
    assert "nothing in common" in out["notes"][1]


@pytest.mark.parametrize("mix", ["system", "parallel", "distinct"])
def test_zh_tw_readers_get_chinese_prompts_and_answers(course, mix):
    """Issue 19: the prompts were English only, so a zh-TW reader saw English answers. Each language
    has its own prompts; the schedules (answer lengths, steps, blocks) are the same in both, and
    the zh-TW answers are Chinese, written by the course model after the Chinese prompts."""
    en, zh = (registry.run("paging", {"mix": mix}, lang) for lang in ("en", "zh-TW"))
    def numbers_of(row):  # the prompt cell is worded per language: 12 (9 shared), 12（共享 9）
        return [row[0], re.findall(r"\d+", row[1])] + row[2:6]
    assert [numbers_of(r) for r in en["tables"][0]["rows"]] == [numbers_of(r) for r in zh["tables"][0]["rows"]]
    answers = column(zh["tables"][0], "課程模型在（c）寫出的回答")
    assert answers and all(any("\u4e00" <= ch <= "\u9fff" for ch in a) for a in answers), answers
    assert not any(any("\u4e00" <= ch <= "\u9fff" for ch in a) for a in column(en["tables"][0], "answer (course model, run c)"))


def test_the_zh_tw_prompts_cut_cleanly_and_start_differently(course):
    """A prompt of P tokens is the first P tokens of these texts, so every character is one token
    (a cut never splits one), and the requests' first tokens differ (so do their answers)."""
    tok = course[1]
    texts = (paging.SYSTEM_TEXT["zh-TW"],) + paging.QUESTIONS["zh-TW"]
    assert all(len(tok.encode(ch)) == 1 for text in texts for ch in text), [
        ch for text in texts for ch in text if len(tok.encode(ch)) != 1]
    starts = {tuple(tok.encode(q)[:3]) for q in paging.QUESTIONS["zh-TW"]}
    assert len(paging.QUESTIONS["zh-TW"]) == len(paging.QUESTIONS["en"]) == len(starts)


@pytest.mark.parametrize("values", [
    {"requests": 8, "prompt": 64, "answer": 32, "block": 1, "pool": 512},
    {"requests": 1, "prompt": 2, "answer": 1, "block": 1, "pool": 8},
    {"mix": "parallel", "requests": 8, "prompt": 2, "answer": 32, "block": 16, "pool": 512},
    {"mix": "distinct", "requests": 8, "prompt": 64, "answer": 32, "block": 16, "pool": 112},
])
def test_controls_at_their_limits(course, values):
    out = check_output(registry.run("paging", values, "zh-TW"))
    assert len(out["figures"]) == 6


def test_too_small_a_pool_says_how_much_is_needed(course):
    with pytest.raises(LessonInputError) as e:
        registry.run("paging", {"prompt": 64, "answer": 32, "block": 16, "pool": 16}, "en")
    assert "at least" in e.value.messages["en"] and "至少" in e.value.messages["zh-TW"]


@pytest.mark.parametrize("values", [
    {"mix": "<img src=x onerror=alert(1)>"}, {"mix": "a" * 5000}, {"requests": "🙂🚀"}, {"requests": 0},
    {"prompt": 10**9}, {"answer": float("nan")}, {"block": 0}, {"pool": -8}, {"nonsense": 1}, {"pool": ""},
])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_hostile_input_is_a_clear_message(course, values, lang):
    reply = run_json_ok("paging", values, lang)
    assert reply["ok"] is False
    message = reply["error"]["message"]
    assert "Traceback" not in message and "<img" not in message and "detail" not in reply["error"]
    assert ("必須" in message or "未知" in message) if lang == "zh-TW" else ("must" in message or "Unknown" in message)


def test_malformed_json_is_refused(course):
    reply = json.loads(registry.run_json("paging", "{not json", "zh-TW"))
    assert reply["ok"] is False and "格式錯誤" in reply["error"]["message"]


# --------------------------------------------------------------------------- the second reader's review (plate 8)


def test_nothing_copied_is_said_with_its_reason(course):
    """When copy-on-write copied nothing, the note says so and why (the prefix fills whole blocks), never
    'copied 0 blocks, on a request's first write into the partly filled block' (the block that is not there)."""
    values = {"mix": "parallel", "prompt": 12, "block": 4}
    zh = registry.run("paging", values, "zh-TW")["notes"][1]
    assert "沒有區塊因寫入時複製而被複製：共享的字首剛好填滿整數個區塊（12 個詞元，3 個 4 詞元的區塊）" in zh
    assert not _zero_copies_as_a_count(zh)
    assert _zero_copies_as_a_count("因寫入時複製而複製的區塊一共 0 個，發生在請求第一次寫進共享、還沒填滿的最後一個區塊時。")
    assert _zero_copies_as_a_count("copy-on-write copied 0 block(s) (a request's first write into the shared block)")


def _zero_copies_as_a_count(note: str) -> bool:
    return bool(re.search(r"一共 0 個|copied 0 block", note))


@pytest.mark.parametrize("mix, prompt, block", [("parallel", 12, 4), ("parallel", 13, 4), ("system", 12, 4),
                                                ("system", 16, 4), ("parallel", 8, 8), ("system", 12, 3)])
def test_the_reason_holds_nothing_is_copied_exactly_when_the_prefix_fills_whole_blocks(course, mix, prompt, block):
    requests, runs = paging.simulate({**DEFAULTS, "mix": mix, "prompt": prompt, "block": block, "pool": 512})
    assert (runs["shared"].copies == 0) == (requests[0].shared % block == 0)


def blocks_add_up(message: str) -> bool:
    """The error's first block count is the longest request's ceil(tokens / block size)."""
    parts = (re.search(r"(\d+) 個提示詞詞元、(\d+) 個回答詞元", message) or re.search(r"(\d+) \+ (\d+) 個詞元", message))
    need, size = re.search(r"需要 (\d+) 個區塊", message), re.search(r"每個區塊 (\d+) 個詞元", message)
    tokens = int(parts.group(1)) + int(parts.group(2))
    return int(need.group(1)) == -(-tokens // int(size.group(1)))


@pytest.mark.parametrize("values", [{"pool": 8}, {"pool": 16, "block": 3}, {"mix": "distinct", "pool": 8},
                                    {"prompt": 64, "answer": 32, "block": 16, "pool": 16}])
def test_too_small_a_pool_adds_up(course, values):
    """'one request of 12 + 6 tokens needs 6 blocks of 4' did not add up (18 tokens fit in 5): the message
    names the longest request, its blocks, and the one block the scheduler keeps for a cached prefix."""
    with pytest.raises(LessonInputError) as e:
        registry.run("paging", values, "en")
    zh, en = e.value.messages["zh-TW"], e.value.messages["en"]
    requests = paging.build_requests(course[1], {**DEFAULTS, **values}, "zh-TW")
    from engine.analysis.scheduler import min_blocks
    need = min_blocks(requests, {**DEFAULTS, **values}["block"])
    assert blocks_add_up(zh) and f"共 {need} 個" in zh and f"{need} in all" in en
    assert not blocks_add_up("快取記憶體太小了：一個 12 + 6 個詞元的請求需要 6 個區塊（每個區塊 4 個詞元），而 8 格只切得出 2 個區塊。")


def server_names(out: dict) -> set[str]:
    """Every place a server is named as a label: legend names, bar categories, table cells and the
    part of a column header before its colon, when it starts with (a), (b) or (c)."""
    found = set()
    for fig in out["figures"]:
        for tr in fig["figure"]["data"]:
            found |= {s for s in [tr.get("name", "")] + [x for x in tr.get("x", []) if isinstance(x, str)]}
        found |= {c for row in fig["table"]["rows"] for c in row if isinstance(c, str)}
        found |= {re.split("[:：]", c)[0] for c in fig["table"]["columns"]}
    for tb in out["tables"]:
        found |= {re.split("[:：]", c)[0] for c in tb["columns"]}
    return {re.split("[:：]", s)[0].replace(" +<br>", " + ") for s in found if re.match(r"[(（][abc][)）]", s)}


def stray_server_names(names: set[str], lang: str) -> set[str]:
    return names - {paging.SCHEME_NAMES[k][lang] for k in paging.SCHEME_NAMES}


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_one_name_per_server(course, lang):
    """The same server was （c）分頁 + 共享 under a bar and （c）分頁 + 字首共享 in a legend, （a）連續配置
    beside （a）連續配置，預留最大長度: one name each, in every label of the demo and in its notes."""
    out = registry.run("paging", None, lang)
    names = server_names(out)
    assert len(names) == 3 and not stray_server_names(names, lang), names
    assert stray_server_names({"（c）分頁 + 共享", "（a）連續配置，預留最大長度"}, "zh-TW") == {
        "（c）分頁 + 共享", "（a）連續配置，預留最大長度"}
    assert "分頁 + 共享" not in " ".join(out["notes"]).replace("分頁 + 字首共享", "")


def test_block_map_bands_free_shared_prefix(course):
    """Free blocks are a band of their own (the panel's light grey); shared and prefix-only blocks are not
    grey, so grey means one thing in the demo; the legend says 已快取的字首 (the cache's prefix misread)."""
    from lessons.common.figures import COLORS
    out = registry.run("paging", {"pool": 80}, "zh-TW")
    for key in ("block_map_paged", "block_map_shared"):
        trace = _fig(out, key)["figure"]["data"][0]
        labels, scale = trace["colorbar"]["ticktext"], trace["colorscale"]
        colors = [scale[2 * i][1] for i in range(len(labels))]
        assert "空閒" in labels and colors[labels.index("空閒")] == paging.FREE_COLOR
        assert COLORS["grey"] not in colors, dict(zip(labels, colors))
    shared = _fig(out, "block_map_shared")["figure"]["data"][0]["colorbar"]["ticktext"]
    assert "已快取的字首" in shared and "快取的字首" not in [s for s in shared if s != "已快取的字首"]


def test_titles_and_cells_name_the_server_first_in_full_width_brackets(course):
    out = registry.run("paging", None, "zh-TW")
    titles = [f["title"] for f in out["figures"]] + [tb["title"] for tb in out["tables"]]
    assert "（b）分頁的區塊圖：每個區塊在誰手上" in titles and "（c）分頁 + 字首共享的區塊圖：每個區塊在誰手上" in titles
    assert any(s.startswith("（c）分頁 + 字首共享：第 ") and "步的區塊表（* 表示" in s for s in titles), titles
    assert all(re.fullmatch(r"\d+（共享 \d+）", row[1]) for row in out["tables"][0]["rows"])


def test_the_real_shape_note_quotes_the_datasheets_and_calls_nothing_decimal(course):
    """80 decimal GB is 74.5 GiB, less than the 79.6 GiB the device reports: the datasheets' GB are not decimal."""
    zh = registry.run("paging", None, "zh-TW")["notes"][-1]
    en = registry.run("paging", None, "en")["notes"][-1]
    assert "規格表寫 80 GB、141 GB，這裡用的是裝置實際回報的總量（H100 79.6 GiB、H200 139.8 GiB）" in zh
    assert "十進位" not in zh and "decimal" not in en and "the datasheets' 80 GB and 141 GB" in en
