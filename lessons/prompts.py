"""The reader's prompt -> token ids, with the bilingual errors every model lesson needs."""
from __future__ import annotations

from lessons.base import LessonInputError, text

MAX_PROMPT_CHARS = 300


def prompt_control(default: str, help: dict | None = None):
    """The prompt text box the model lessons share (same label and limit everywhere)."""
    return text("prompt", {"en": "Prompt", "zh-TW": "提示文字"}, default,
                help=help or {"en": "The text so far; the model predicts what comes next.",
                              "zh-TW": "目前為止的文字；模型會預測接下來的內容。"},
                max_length=MAX_PROMPT_CHARS)


def encode_prompt(tok, prompt: str, max_tokens: int) -> list[int]:
    """Token ids of ``prompt``; LessonInputError when empty or longer than ``max_tokens``."""
    if not prompt.strip():
        raise LessonInputError("Type a prompt first: the model needs some text to continue.",
                               "請先輸入提示文字：模型需要一些文字才能接著寫。")
    ids = tok.encode(prompt)
    if len(ids) > max_tokens:
        raise LessonInputError(
            f"The prompt is {len(ids)} tokens; this demo reads at most {max_tokens}. Shorten it.",
            f"提示文字有 {len(ids)} 個 token，這個示範最多只能讀 {max_tokens} 個，請縮短一些。")
    return ids
