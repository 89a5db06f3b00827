"""Plate 1: an LLM is a next-token machine. One forward pass of the course model gives a
probability for every token; temperature, top-k and top-p reshape them; a seeded draw picks
one. "Append and continue" puts the pick at the end of the prompt: the reader steps the loop.
"""
from __future__ import annotations

import numpy as np

from engine import load_course_model
from engine.sampling import SamplingParams, sample, softmax
from lessons.common import labels as L
from lessons.common.base import slider
from lessons.common.figures import COLORS, HIGHLIGHT, figure, floats, fmt_percent, layout, show_piece, t, unique_labels
from lessons.common.prompts import MAX_PROMPT_CHARS, encode_prompt, prompt_control

NAME = "next_token"
PLATE = "plates/01-next-token"
TITLE = {"en": "Next-token probabilities", "zh-TW": "下一個詞元的機率"}

DEFAULT_PROMPT = "The cat sat on the"
N_BARS = 10

CONTROLS = (
    prompt_control(DEFAULT_PROMPT),
    slider("temperature", {"en": "Temperature", "zh-TW": "溫度"}, 0.8, 0.0, 2.0, 0.05,
           help={"en": "0 always takes the most likely token; higher values flatten the odds.",
                 "zh-TW": "0 代表永遠選最可能的詞元；數值越高，機率分佈越平。"}),
    slider("top_k", {"en": "Top-k (0 = off)", "zh-TW": "Top-k（0 = 關閉）"}, 0, 0, 50, 1,
           help={"en": "Keep only the k most likely tokens.", "zh-TW": "只留下最可能的 k 個詞元。"}),
    slider("top_p", {"en": "Top-p (1 = off)", "zh-TW": "Top-p（1 = 關閉）"}, 1.0, 0.05, 1.0, 0.05,
           help={"en": "Keep the most likely tokens until their probabilities add up to p.",
                 "zh-TW": "從最可能的詞元往下累加，機率加到 p 就停，只留下這些詞元。"}),
    slider("seed", {"en": "Random seed", "zh-TW": "隨機種子"}, 0, 0, 999, 1,
           help={"en": "The same seed and settings always draw the same token.",
                 "zh-TW": "種子和設定都一樣，抽到的詞元就一定一樣。"}),
)

AFTER = {"en": "after temperature / top-k / top-p", "zh-TW": "套用溫度、top-k、top-p 之後"}
MODEL_ODDS = {"en": "model (temperature 1)", "zh-TW": "模型原始機率（溫度 1）"}


def _bar_ids(p_model: np.ndarray, chosen: int) -> list[int]:
    """The N most likely tokens (the filters keep the order), plus the pick if it is lower."""
    order = [int(i) for i in np.lexsort((np.arange(p_model.size), -p_model))[:N_BARS]]
    return order if chosen in order else order + [chosen]


def _figure_probs(tok, order, p_model, p, chosen, lang) -> dict:
    labels = unique_labels([show_piece(s) for s in tok.pieces(order)], order)
    after, model, lbl_id = t(AFTER, lang), t(MODEL_ODDS, lang), t(L.TOKEN_ID, lang)
    data = [
        {"type": "bar", "name": after, "x": labels, "y": floats(p[order]),
         "marker": {"color": [HIGHLIGHT if i == chosen else COLORS["blue"] for i in order]},
         "customdata": order, "text": [fmt_percent(v) for v in p[order]], "textposition": "outside",
         "hovertemplate": f"%{{x}} ({lbl_id} %{{customdata}})<br>%{{y:.2%}}<extra>{after}</extra>"},
        {"type": "scatter", "mode": "markers", "name": model, "x": labels, "y": floats(p_model[order]),
         "marker": {"symbol": "line-ew-open", "size": 22, "color": COLORS["grey"], "line": {"width": 3}},
         "hovertemplate": f"%{{x}}<br>%{{y:.2%}}<extra>{model}</extra>"},
    ]
    title = t({"en": "What comes next? The model's top guesses", "zh-TW": "接下來是什麼？模型心中的前幾名"}, lang)
    lay = layout(t({"en": "next token (␣ = space)", "zh-TW": "下一個詞元（␣ 代表空白）"}, lang), t(L.PROBABILITY, lang),
                 yaxis={"tickformat": ".0%", "rangemode": "tozero"}, barmode="overlay")
    cols = [t({"en": "rank", "zh-TW": "名次"}, lang), t(L.TOKEN, lang),
            lbl_id, model, after, t({"en": "drawn", "zh-TW": "抽中"}, lang)]
    drawn = t({"en": "yes", "zh-TW": "是"}, lang)
    rows = [[r, pc, str(i), fmt_percent(p_model[i]), fmt_percent(p[i]), drawn if i == chosen else ""]
            for r, (i, pc) in enumerate(zip(order, tok.pieces(order)), start=1)]
    return figure("probs", title, data, lay, cols, rows)


def _notes(tok, ids, p_model, p, chosen, params, lang) -> list[str]:
    piece = tok.pieces([chosen])[0]
    notes = [t({"en": f"Drawn: “{piece}” (id {chosen}): {fmt_percent(p[chosen])} after the filters, "
                      f"{fmt_percent(p_model[chosen])} in the model's own odds.",
                "zh-TW": f"抽中「{piece}」（id {chosen}）：篩選後的機率 {fmt_percent(p[chosen])}，"
                         f"模型原始機率 {fmt_percent(p_model[chosen])}。"}, lang)]
    if params.greedy:
        notes.append(t({"en": "Temperature 0 is greedy decoding: the most likely token always wins, the seed does not matter.",
                        "zh-TW": "溫度 0 就是貪婪解碼：永遠選最可能的詞元，隨機種子不影響結果。"}, lang))
    else:
        temp = params.temperature
        effect = ({"en": "sharpens", "zh-TW": "讓機率更集中"} if temp < 1 else
                  {"en": "flattens", "zh-TW": "讓機率更平均"} if temp > 1 else {"en": "keeps", "zh-TW": "維持原本的機率"})
        kept = int(np.count_nonzero(p))
        notes.append(t({
            "en": (f"{kept:,} of the {tok.vocab_size:,} tokens could be drawn; seed {params.seed} drew this one. "
                   f"Temperature {temp:g} {effect['en']} the odds."),
            "zh-TW": (f"詞彙表的 {tok.vocab_size:,} 個詞元裡，有 {kept:,} 個可能被抽中，種子 {params.seed} 抽到這一個。"
                      f"溫度 {temp:g} {effect['zh-TW']}。")}, lang))
    notes.append(t({"en": f"The prompt is {len(ids):,} tokens; the model read all of them to make this one guess.",
                    "zh-TW": f"提示詞有 {len(ids):,} 個詞元；模型全部讀完，才做出這一次猜測。"}, lang))
    return notes


def _next_step(tok, model, ids, chosen, prompt, lang) -> tuple[list[str], list[dict]]:
    """(notes, actions): append the pick and go on, unless the pick cannot be appended."""
    notes, actions = [], []
    new_prompt = tok.decode(ids + [chosen])
    if chosen == tok.eos_id:
        notes.append(t({"en": "The model drew the end-of-text token: it thinks the text is finished.",
                        "zh-TW": "模型抽到「結束」詞元：它認為這段文字已經寫完了。"}, lang))
    elif "\ufffd" in new_prompt[len(tok.decode(ids)):]:
        notes.append(t({"en": "The pick is only part of a character (its bytes are shown in hex), so it cannot be appended "
                              "as text: change the seed or the temperature.",
                        "zh-TW": "抽中的只是某個字元的一部分（位元組以十六進位顯示），沒辦法當成文字接上去：換個種子或溫度試試。"}, lang))
    elif len(ids) + 1 >= model.config.max_seq_len or len(new_prompt) > MAX_PROMPT_CHARS:
        notes.append(t({"en": "The prompt box or the model's context window is full: start again with a shorter prompt.",
                        "zh-TW": "提示詞欄位或模型的上下文視窗已經滿了：請換一段短一點的提示詞重新開始。"}, lang))
    else:
        actions.append({"label": t({"en": "Append and continue", "zh-TW": "接上去，繼續"}, lang),
                        "values": {"prompt": new_prompt}})
    if prompt != DEFAULT_PROMPT:
        actions.append({"label": t({"en": "Start over", "zh-TW": "重新開始"}, lang), "values": {"prompt": DEFAULT_PROMPT}})
    return notes, actions


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    ids = encode_prompt(tok, values["prompt"], model.config.max_seq_len)
    params = SamplingParams(temperature=values["temperature"], top_k=values["top_k"],
                            top_p=values["top_p"], seed=values["seed"])
    logits = np.asarray(model.forward(ids, last_only=True)[-1], dtype=np.float64)  # [V]
    p_model = softmax(logits)  # the model's own odds (temperature 1)
    chosen, p = sample(logits, params, np.random.default_rng(params.seed))  # p: after the filters
    fig = _figure_probs(tok, _bar_ids(p_model, chosen), p_model, p, chosen, lang)
    more_notes, actions = _next_step(tok, model, ids, chosen, values["prompt"], lang)
    chips = [{"text": s, "id": i, "title": t({"en": f"id {i}", "zh-TW": f"id {i}"}, lang)}
             for i, s in zip(ids, tok.pieces(ids))]
    return {"tokens": chips, "figures": [fig], "notes": _notes(tok, ids, p_model, p, chosen, params, lang) + more_notes,
            "actions": actions}
