"""The reader's prompt -> token ids, with the bilingual errors every model lesson needs."""
from __future__ import annotations

from lessons.common import labels
from lessons.common.base import LessonInputError, text

MAX_PROMPT_CHARS = 300

HELP = {"en": "The text so far; the model predicts what comes next.",
        "zh-TW": "到目前為止的文字；模型會預測接下來是什麼。"}


def prompt_control(default, help: dict | None = None):
    """The prompt text box the model lessons share (same label and limit everywhere).

    ``default`` is one prompt, or a Text dict with an example in each language.
    """
    return text("prompt", labels.PROMPT, default, help=help or HELP, max_length=MAX_PROMPT_CHARS)


def encode_prompt(tok, prompt: str, max_tokens: int) -> list[int]:
    """Token ids of ``prompt``; LessonInputError when empty or longer than ``max_tokens``."""
    if not prompt.strip():
        raise LessonInputError("Type a prompt first: the model needs some text to continue.",
                               "請先輸入提示詞：模型要有一段文字才能接著寫。")
    ids = tok.encode(prompt)
    if len(ids) > max_tokens:
        raise LessonInputError(
            f"The prompt is {len(ids):,} tokens; this demo reads at most {max_tokens:,}. Shorten it.",
            f"提示詞有 {len(ids):,} 個詞元，這個示範最多只讀 {max_tokens:,} 個，請刪短一點。")
    return ids
