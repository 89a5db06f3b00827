"""Plate 1: an LLM is a next-token machine. One forward pass of the course model gives a
probability for every token; temperature, top-k and top-p reshape them; a seeded draw picks
one. "Append and continue" puts the pick at the end of the prompt: the reader steps the loop.
"""
from __future__ import annotations

import numpy as np

from engine import load_course_model
from engine.sampling import SamplingParams, distribution, sample, softmax
from lessons.base import slider
from lessons.figures import COLORS, HIGHLIGHT, figure, floats, layout, show_piece, t, unique_labels
from lessons.prompts import MAX_PROMPT_CHARS, encode_prompt, prompt_control

TITLE = {"en": "Next-token probabilities", "zh-TW": "下一個詞元的機率"}

DEFAULT_PROMPT = "The cat sat on the"
N_BARS = 10

CONTROLS = (
    prompt_control(DEFAULT_PROMPT),
    slider("temperature", {"en": "Temperature", "zh-TW": "溫度"}, 0.8, 0.0, 2.0, 0.05,
           help={"en": "0 always takes the most likely token; higher values flatten the odds.",
                 "zh-TW": "0 永遠選最可能的詞元；數值越高，機率分佈越平。"}),
    slider("top_k", {"en": "Top-k (0 = off)", "zh-TW": "Top-k（0 = 關閉）"}, 0, 0, 50, 1,
           help={"en": "Keep only the k most likely tokens.", "zh-TW": "只保留最可能的 k 個詞元。"}),
    slider("top_p", {"en": "Top-p (1 = off)", "zh-TW": "Top-p（1 = 關閉）"}, 1.0, 0.05, 1.0, 0.05,
           help={"en": "Keep the most likely tokens until their probabilities add up to p.",
                 "zh-TW": "從最可能的詞元開始保留，直到機率總和達到 p。"}),
    slider("seed", {"en": "Random seed", "zh-TW": "隨機種子"}, 0, 0, 999, 1,
           help={"en": "The same seed and settings always draw the same token.",
                 "zh-TW": "相同的種子與設定，永遠抽到相同的詞元。"}),
)


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    prompt = values["prompt"]
    ids = encode_prompt(tok, prompt, model.config.max_seq_len)
    params = SamplingParams(temperature=values["temperature"], top_k=values["top_k"],
                            top_p=values["top_p"], seed=values["seed"])

    logits = np.asarray(model.forward(ids, last_only=True)[-1], dtype=np.float64)  # [V]
    p_model = softmax(logits)  # the model's own odds (temperature 1)
    chosen, p = sample(logits, params, np.random.default_rng(params.seed))  # p: after the filters

    # Bars: the N most likely tokens (the filters keep the order), plus the pick if it is lower.
    order = [int(i) for i in np.lexsort((np.arange(p_model.size), -p_model))[:N_BARS]]
    if chosen not in order:
        order.append(chosen)
    labels = unique_labels([show_piece(s) for s in tok.pieces(order)], order)
    pieces = tok.pieces(order)
    lbl_after = t({"en": "after temperature / top-k / top-p", "zh-TW": "套用溫度 / top-k / top-p 後"}, lang)
    lbl_model = t({"en": "model (temperature 1)", "zh-TW": "模型原始機率（溫度 1）"}, lang)
    lbl_id = t({"en": "id", "zh-TW": "編號"}, lang)
    data = [
        {"type": "bar", "name": lbl_after, "x": labels, "y": floats(p[order]),
         "marker": {"color": [HIGHLIGHT if i == chosen else COLORS["blue"] for i in order]},
         "customdata": order, "text": [f"{v:.1%}" for v in p[order]], "textposition": "outside",
         "hovertemplate": f"%{{x}} ({lbl_id} %{{customdata}})<br>%{{y:.2%}}<extra>{lbl_after}</extra>"},
        {"type": "scatter", "mode": "markers", "name": lbl_model, "x": labels, "y": floats(p_model[order]),
         "marker": {"symbol": "line-ew-open", "size": 22, "color": COLORS["grey"], "line": {"width": 3}},
         "hovertemplate": f"%{{x}}<br>%{{y:.2%}}<extra>{lbl_model}</extra>"},
    ]
    title = t({"en": "What comes next? The model's top guesses", "zh-TW": "接下來是什麼？模型最有把握的猜測"}, lang)
    lay = layout(title, t({"en": "next token (␣ = space)", "zh-TW": "下一個詞元（␣ = 空格）"}, lang),
                 t({"en": "probability", "zh-TW": "機率"}, lang),
                 yaxis={"tickformat": ".0%", "rangemode": "tozero"}, barmode="overlay")
    cols = [t({"en": "rank", "zh-TW": "名次"}, lang), t({"en": "token", "zh-TW": "詞元"}, lang),
            lbl_id, lbl_model, lbl_after, t({"en": "chosen", "zh-TW": "被選中"}, lang)]
    yes, no = t({"en": "yes", "zh-TW": "是"}, lang), ""
    rows = [[r, pc, i, round(float(p_model[i]), 6), round(float(p[i]), 6), yes if i == chosen else no]
            for r, (i, pc) in enumerate(zip(order, pieces), start=1)]
    fig = figure("probs", title, data, lay, cols, rows)

    # ------------------------------------------------------------------ notes
    piece = tok.pieces([chosen])[0]
    kept = int(np.count_nonzero(p))
    notes = [t({"en": f"Chosen: “{piece}” (id {chosen}): {p[chosen]:.1%} after the filters, {p_model[chosen]:.1%} in the model's own odds.",
                "zh-TW": f"選中：「{piece}」（編號 {chosen}）：套用篩選後 {p[chosen]:.1%}，模型原始機率 {p_model[chosen]:.1%}。"}, lang)]
    if params.greedy:
        notes.append(t({"en": "Temperature 0 is greedy decoding: the most likely token always wins, the seed does not matter.",
                        "zh-TW": "溫度 0 就是貪婪解碼：永遠選最可能的詞元，隨機種子不影響結果。"}, lang))
    else:
        notes.append(t({
            "en": (f"{kept:,} of {tok.vocab_size:,} tokens could be drawn; seed {params.seed} drew this one from them. "
                   f"Temperature {params.temperature:g} {'sharpens' if params.temperature < 1 else 'flattens' if params.temperature > 1 else 'keeps'} the odds."),
            "zh-TW": (f"{tok.vocab_size:,} 個詞元中有 {kept:,} 個可能被抽中；種子 {params.seed} 從中抽到這一個。"
                      f"溫度 {params.temperature:g} {'讓機率更集中' if params.temperature < 1 else '讓機率更平均' if params.temperature > 1 else '維持原本的機率'}。")}, lang))
    notes.append(t({"en": f"The prompt is {len(ids)} tokens; the model read all of them to make this one guess.",
                    "zh-TW": f"提示文字有 {len(ids)} 個詞元；模型讀完全部，才做出這一次猜測。"}, lang))

    actions = []
    new_prompt = tok.decode(ids + [chosen])
    if chosen == tok.eos_id:
        notes.append(t({"en": "The model chose the end-of-text token: it thinks the text is finished.",
                        "zh-TW": "模型選了「結束」詞元：它認為這段文字寫完了。"}, lang))
    elif "\ufffd" in new_prompt[len(tok.decode(ids)):]:
        notes.append(t({"en": "The pick is only part of a character (its bytes are shown in hex), so it cannot be appended "
                              "as text: change the seed or the temperature.",
                        "zh-TW": "選中的只是某個字元的一部分（以十六進位顯示其位元組），無法當作文字接上：請換個種子或溫度。"}, lang))
    elif len(ids) + 1 >= model.config.max_seq_len or len(new_prompt) > MAX_PROMPT_CHARS:
        notes.append(t({"en": "The prompt box or the model's context window is full: start again with a shorter prompt.",
                        "zh-TW": "提示欄或模型的上下文視窗已滿：請用較短的提示文字重新開始。"}, lang))
    else:
        actions.append({"label": t({"en": "Append and continue", "zh-TW": "接上並繼續"}, lang),
                        "values": {"prompt": new_prompt}})
    if prompt != DEFAULT_PROMPT:
        actions.append({"label": t({"en": "Start over", "zh-TW": "重新開始"}, lang), "values": {"prompt": DEFAULT_PROMPT}})

    chips = [{"text": s, "id": i, "title": t({"en": f"id {i}", "zh-TW": f"編號 {i}"}, lang)}
             for i, s in zip(ids, tok.pieces(ids))]
    return {"tokens": chips, "figures": [fig], "notes": notes, "actions": actions}
