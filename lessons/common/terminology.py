"""The course's terminology table: one term per concept, in English and in zh-TW (Taiwan).

Every page, every glossary entry and every string a demo shows (labels, help, figure and
axis titles, legend names, table headers, notes, error messages) uses the term below for
its concept. ``avoid_en`` / ``avoid_zh`` are regular expressions for the other names a
writer reaches for; ``tests/site/test_page_terminology.py`` (pages) and
``tests/lessons/test_terminology.py`` (demo strings) fail on any of them.

How the zh-TW column was decided (the reason of each choice is in its row):

* Things a reader learns as Chinese nouns get a Chinese term, introduced once per page in
  the first-use form 「中文（English）」: 詞元（token）, 嵌入向量（embedding）, KV 快取.
* The roles inside attention keep their English names, as Taiwanese courses and papers do:
  query, key, value, head. The formulas write them as letters (Q, K, V) and "KV 快取" is
  named after two of them; 鍵／值／查詢 would make the letters and the words disagree.
* Taiwan usage throughout (資料, 記憶體, 快取, 位元組, 預設, 程式碼, 執行); mainland forms
  are in ``tests/site/test_zh_tw.py`` as well.

A parenthesised gloss after a term, 「詞元（token）」 or "(詞元)", is not checked: that is
where a page gives the other language's name on first use. The glossary may list search
aliases in its headings in the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    concept: str  # short id; the glossary anchor where the glossary has the term
    en: str  # the English term
    zh: str  # the zh-TW term
    first_zh: str  # first use on a zh-TW page: term plus the English gloss
    why: str  # why this term and not the others
    avoid_en: tuple[str, ...] = ()  # regexes for other names of the concept (English text)
    avoid_zh: tuple[str, ...] = ()  # regexes for other names of the concept (zh-TW text)


TERMS: tuple[Term, ...] = (
    # ------------------------------------------------------------------ text and tokens
    Term("token", "token", "詞元", "詞元（token）",
         "詞元 is the Taiwanese NLP literature's word for a token; a bare English 'token' "
         "beside it read as a second concept.",
         avoid_zh=(r"(?<![A-Za-z_])[Tt]okens?(?![A-Za-z_])",)),
    Term("tokenizer", "tokenizer", "tokenizer", "tokenizer（斷詞器）",
         "Kept in English: 分詞器 and 斷詞器 both circulate and neither is settled; the "
         "glossary lists them as search aliases.",
         avoid_zh=(r"分詞器", r"斷詞器")),
    Term("prompt", "prompt", "提示詞", "提示詞（prompt）",
         "提示詞 as in 提示詞工程; a bare 提示 also means a hint or tip, which the UI needs "
         "(提示訊息, 小提示 are that meaning, not the prompt).",
         avoid_zh=(r"(?<!小)提示(?!詞|訊息)",)),
    Term("context-window", "context window", "上下文視窗", "上下文視窗（context window）",
         "視窗 is Taiwan's word for a window; 窗口 is mainland usage.",
         avoid_zh=(r"窗口", r"語境視窗")),
    Term("vocabulary", "vocabulary", "詞彙表", "詞彙表（vocabulary）",
         "One word for the tokenizer's list of tokens.",
         avoid_zh=(r"詞表(?!示)", r"字彙表")),
    # ------------------------------------------------------------------ vectors
    Term("embedding", "embedding", "嵌入向量", "嵌入向量（embedding）",
         "A Chinese noun for the vector a token becomes; 'Embedding 向量' mixed both and a "
         "bare 嵌入 reads as the verb (which the authors' page needs: 嵌入示範, to embed a demo).",
         avoid_en=(r"embedding vector",),
         avoid_zh=(r"(?<![A-Za-z_])[Ee]mbeddings?(?![A-Za-z_])", r"嵌入(?!向量|(?:即時)?示範|它)")),
    Term("dimension", "dimension (of a vector: how many numbers it has)", "維度", "維度（dimension）",
         "A vector of d_model numbers has d_model dimensions; 'length' (長度) also names its norm, which the "
         "cosine similarity ignores, so 'longer vectors' read as larger ones. Say how many numbers: 維度越多, "
         "有 d_c 個數字的潛在向量. Its count is 維度 too, 向量維度 and 維度 128, not 寬度: the pages' 「寬度 128」 "
         "beside the glossary's 維度 read as two measures (a width stays the feed-forward network's).",
         avoid_en=(r"\b[Ll]onger vectors?\b", r"\bvectors? of length\b", r"\bof length d_\w+"),
         avoid_zh=(r"向量越長", r"長度(?:是|為) ?d_", r"一個 ?d_\S+ ?個數字的", r"向量寬度")),
    # ------------------------------------------------------------------ inside attention
    Term("query", "query", "query", "query（查詢向量）",
         "Kept in English with key and value (see the module doc): plate 4 promises the three "
         "names the formulas abbreviate as Q, K, V.",
         avoid_zh=(r"查詢向量", r"(?<![組多])查詢")),
    Term("key", "key", "key", "key（鍵向量）",
         "Kept in English (see query).",
         avoid_zh=(r"鍵向量", r"(?<![關按])鍵(?![盤入])")),
    Term("value", "value", "value", "value（值向量）",
         "Kept in English (see query).",
         avoid_zh=(r"值向量",)),
    Term("head", "head", "head", "head（注意力頭）",
         "Kept in English like query/key/value; compounds follow it: query head, KV head, "
         "head 維度. 多頭注意力 stays as the established name of multi-head attention.",
         avoid_en=(r"attention-head dimension",),
         avoid_zh=(r"注意力頭", r"查詢頭", r"KV ?頭", r"每頭", r"個頭(?!髮)", r"頭維度")),
    Term("head-dim", "head dimension", "head 維度", "head 維度（head_dim）",
         "Numbers per head per vector; 'size' was read as bytes.",
         avoid_en=(r"head size",),
         avoid_zh=(r"head ?大小", r"每頭維度")),
    Term("feed-forward", "feed-forward network (FFN)", "前饋網路", "前饋網路（FFN）",
         "One name for the SwiGLU block after attention.",
         avoid_en=(r"feed-forward (?:block|layer)",),
         avoid_zh=(r"前饋層", r"前饋神經網路")),
    Term("gqa", "grouped-query attention (GQA)", "分組查詢注意力", "分組查詢注意力（GQA）",
         "The established Chinese name; the letters follow on first use."),
    Term("mqa", "multi-query attention (MQA)", "多查詢注意力", "多查詢注意力（MQA）",
         "Parallel to GQA's name."),
    Term("mha", "multi-head attention (MHA)", "多頭注意力", "多頭注意力（MHA）",
         "The established Chinese name of the original attention."),
    # ------------------------------------------------------------------ generation
    Term("sampling", "sampling", "取樣", "取樣（sampling）",
         "取樣 is the Taiwan term; 採樣 is mainland usage and 抽樣 means survey sampling.",
         avoid_zh=(r"採樣", r"抽樣")),
    Term("prefill", "prefill", "預填", "預填（prefill）",
         "The pages explain the phase in Chinese; the English word stays as the gloss.",
         avoid_zh=(r"(?<![A-Za-z_])[Pp]refill(?![A-Za-z_])",)),
    Term("decode", "decode", "解碼", "解碼（decode）",
         "As prefill.",
         avoid_zh=(r"(?<![A-Za-z_.])[Dd]ecode(?![A-Za-z_(])",)),
    Term("kv-cache", "KV cache", "KV 快取", "KV 快取（KV cache）",
         "快取 is Taiwan's word for cache; KV keeps the letters of key and value.",
         avoid_en=(r"\bK/V cache", r"\bkv cache", r"\bkey-value cache"),
         avoid_zh=(r"KV[- ]?cache", r"KV快取", r"K/V ?快取")),
    # ------------------------------------------------------------------ hardware and cost
    Term("flops", "FLOPs (a count) / FLOP/s (a rate)", "浮點運算次數", "浮點運算次數（FLOPs）",
         "FLOPs counts operations, FLOP/s is a speed; FLOPS in capitals (TFLOPS too) mixes the two.",
         avoid_en=(r"\b[kKMGTP]?FLOPS\b", r"FLOPs/s", r"FLOPs per second"),
         avoid_zh=(r"\b[kKMGTP]?FLOPS\b", r"FLOPs/s")),
    Term("roofline", "roofline", "Roofline", "Roofline 模型",
         "Williams et al.'s name, kept as a proper name; 屋頂線 is a literal rendering nobody "
         "in Taiwan uses.",
         avoid_zh=(r"屋頂線",)),
    Term("ridge-point", "ridge point", "脊點", "脊點（ridge point）",
         "Where the roofline's slope meets its roof."),
    Term("arithmetic-intensity", "arithmetic intensity", "運算強度", "運算強度（arithmetic intensity）",
         "FLOPs per byte moved.",
         avoid_zh=(r"算術強度", r"計算強度")),
    Term("compute", "compute throughput", "運算能力", "運算能力",
         "算力 is mainland shorthand.",
         avoid_zh=(r"算力",)),
    Term("dram-die", "die", "晶粒", "晶粒（die）",
         "A die is one piece of silicon (晶粒); a chip (晶片) is the packaged part.",
         avoid_zh=(r"DRAM 晶片",)),
    Term("batch", "batch", "批次", "批次（batch）",
         "Taiwan usage; 批量 and 批處理 are mainland forms.",
         avoid_zh=(r"批量", r"批處理")),
    # ------------------------------------------------------------------ the site itself
    Term("layer", "layer (a Transformer block)", "層", "層（layer）",
         "The course counts a Transformer in layers (第 1 層, 每一層), so a Transformer block is a 層 "
         "and its attention and feed-forward halves are 子層; 區塊 is kept for the paging block "
         "(row 'kv-block').",
         avoid_zh=(r"(?:注意力|Transformer|子|上一個|下一個|同一種)\s?區塊", r"堆疊裡的一個區塊")),
    Term("markdown-block", "block (of a Markdown page: a demo fence, an admonition)", "區段", "區段",
         "The authors' page talks about Markdown's fenced blocks and admonitions; 區段 keeps them "
         "apart from the paging block (row 'kv-block').",
         avoid_zh=(r"(?:示範|圍欄|收合|程式碼)區塊",)),
    Term("token-group", "group of tokens (KIVI)", "詞元組", "詞元組（token group）",
         "KIVI quantizes each key channel over a group of consecutive tokens; 詞元組 says what is "
         "grouped. 區塊 is the paging block, and 群組 (row 'quant-group') is any set of numbers that "
         "share a scale.",
         avoid_en=(r"\bblock of (?:\{RESIDUAL\}|\[\[fact:shrink\.kivi_residual\]\]|\d+) tokens? is complete",
                   r"over a block of (?:\{RESIDUAL\}|\d+ )?tokens"),
         avoid_zh=(r"湊滿[^。；，]{0,24}?區塊", r"每\s*\S+\s*個詞元的區塊", r"一組位置一起量化", r"一組量化完",
                   r"量化成一組")),
    Term("detokenize", "decode (ids back to text)", "還原成文字", "還原成文字",
         "解碼 is the decode phase of generation (row 'decode'); turning token ids back into text is "
         "said in words: 把 id 還原成文字.",
         avoid_zh=(r"解碼(?:則是反過來|時再把|回去|成文字|回文字)", r"(?:id|編號|小塊)\S{0,3}解碼")),
    Term("memory-bound", "memory-bound", "受記憶體頻寬限制", "受記憶體頻寬限制（memory-bound）",
         "What limits the step is the memory's bandwidth, not its size; 受限於記憶體 reads as 'out of "
         "memory'. Its twin is 受運算能力限制 (compute-bound).",
         avoid_zh=(r"受限於\[?記憶體", r"記憶體受限", r"受記憶體限制", r"受限於\[?運算", r"受運算限制", r"運算受限",
                   r"卡在記憶體(?!頻寬)", r"受限於主機", r"由記憶體決定", r"由運算決定")),
    Term("achieved-bandwidth", "achieved bandwidth", "實測頻寬", "實測頻寬（achieved bandwidth）",
         "The bytes a step moved divided by its measured time: 實測 says it was measured, beside the "
         "datasheet's peak bandwidth.",
         avoid_zh=(r"達成\[?頻寬", r"達到的\[?頻寬")),  # \[? : a link may start at 頻寬
    Term("quant-scheme", "scheme", "量化做法", "量化做法（scheme）",
         "Which numbers share a scale, and what is done first: the demo's control and the page's "
         "基準做法 share one word.",
         avoid_zh=(r"量化方式",)),
    Term("rotated-scheme", "random rotation first", "先隨機旋轉", "先隨機旋轉",
         "The engine's `rotated` scheme: the demo's option, its note and plate 7 call it by one name.",
         avoid_zh=(r"(?<!隨機)先旋轉", r"「rotated」")),
    Term("divergence", "divergence (two continuations part)", "分開", "分開",
         "Where the float and the quantized caches' texts first differ: 兩段文字在第 N 步分開; 分歧 "
         "beside it read as a second idea.",
         avoid_zh=(r"分歧",)),
    Term("production", "production (a tokenizer, a model, a library)", "商用模型的", "商用模型的 tokenizer",
         "正式上線 is a calque of 'in production'; say whose or how it is used: 商用模型的 tokenizer, "
         "實際在用的大型模型, 業界常用的函式庫.",
         avoid_zh=(r"正式上線", r"正式版", r"正式的函式庫", r"正式模型", r"(?:實際|真正)上線的")),
    Term("plate", "plate", "張", "第 N 張",
         "The course is a set of plates, counted 第 1 張 … 第 9 張.",
         avoid_en=(r"\bpanels?\b",),
         avoid_zh=(r"小圖", r"小教室圖", r"課程圖卡", r"\d\s*幅", r"這幅", r"前面幾幅")),
    Term("demo", "live demo", "即時示範", "即時示範",
         "One name for a demo that reruns in the browser.",
         avoid_en=(r"interactive demo",),
         avoid_zh=(r"互動示範",)),
    Term("repository", "repository", "儲存庫", "儲存庫（repository）",
         "Taiwan usage for a Git repository.",
         avoid_zh=(r"版本庫",)),
    Term("millimetre", "millimetre", "公釐", "公釐",
         "Taiwan's unit name; 毫米 is mainland usage.",
         avoid_zh=(r"毫米",)),
    Term("language", "Traditional Chinese (Taiwan)", "繁體中文（台灣）", "繁體中文（台灣）",
         "The site's second language is a script and a locale, not a spoken variety.",
         avoid_en=(r"Taiwanese Mandarin",)),
    # ------------------------------------------------------------------ shrinking the cache (plate 7)
    Term("sliding-window", "sliding-window attention", "滑動視窗注意力", "滑動視窗注意力（sliding-window attention）",
         "視窗 as in 上下文視窗, Taiwan's word for a window; the window slides along with the newest token. "
         "窗口 is mainland usage, 滑窗 a clipped form.",
         avoid_zh=(r"滑動窗口", r"滑窗")),
    Term("rolling-buffer", "rolling-buffer cache", "環狀緩衝快取", "環狀緩衝快取（rolling-buffer cache）",
         "Its W slots are reused in a ring (position p in slot p mod W): 環狀緩衝區 is the Taiwanese textbook "
         "name of a ring buffer. 滾動 reads as scrolling; 環形/循環 are mainland renderings.",
         avoid_zh=(r"滾動緩衝", r"循環緩衝", r"環形緩衝")),
    Term("quantization", "quantization", "量化", "量化（quantization）",
         "The signal-processing term in Taiwan; 量子化 is the Japanese word and reads as 'quantum'.",
         avoid_zh=(r"量子化",)),
    Term("quant-code", "code", "量化碼", "量化碼（code）",
         "The small integer a quantized number becomes. 代碼 reads as mainland 'program code' "
         "(tests/site/test_zh_tw.py flags it) and 程式碼 is program code.",
         avoid_zh=(r"代碼", r"編碼值")),
    Term("scale", "scale", "縮放係數", "縮放係數（scale）",
         "係數 is Taiwan's word for a coefficient (系數 is mainland); 縮放 says what it does: the step between "
         "two codes.",
         avoid_zh=(r"比例因子", r"縮放因子", r"尺度因子")),
    Term("zero-point", "zero point", "零點", "零點（zero point）",
         "The number that code 0 stands for; one word, as in the papers' Chinese write-ups.",
         avoid_zh=(r"零點偏移", r"零偏移")),
    Term("quant-group", "group (numbers sharing one scale)", "群組", "群組（group）",
         "群組 is Taiwan usage. 分組 stays with GQA (分組查詢注意力), so a group of query heads and a group of "
         "numbers sharing a scale never read as the same thing.",
         avoid_zh=(r"量化分組", r"量化組(?!合)")),
    Term("channel", "channel", "通道", "通道（channel）",
         "One of the head_dim coordinates of a key or value, as KIVI's 'per-channel'; 頻道 is a broadcast channel.",
         avoid_zh=(r"頻道",)),
    Term("outlier", "outlier", "離群值", "離群值（outlier）",
         "The statistics term in Taiwan. 異常值 suggests an error, and an outlier channel is not one: it is how "
         "the model stores something.",
         avoid_zh=(r"異常值", r"極端值")),
    Term("rotation", "random rotation", "隨機旋轉", "隨機旋轉（random rotation）",
         "A plain description of the orthogonal matrix; RoPE's position rotation keeps its own name, "
         "旋轉位置編碼."),
    Term("bit", "bit", "位元", "位元（bit）",
         "Taiwan usage, as 位元組 for byte; 比特 is mainland.",
         avoid_zh=(r"比特",)),
    Term("attention-sink", "attention sink", "注意力匯聚點", "注意力匯聚點（attention sink）",
         "The first tokens where attention pools whatever they say, as water pools in a sink: 匯聚 is the "
         "Taiwanese word for things flowing together. 沉沒 and 水槽 translate the English word, not the idea.",
         avoid_zh=(r"注意力沉", r"注意力槽", r"注意力水槽", r"注意力匯點")),
    Term("heavy-hitter", "heavy hitter", "heavy hitter", "heavy hitter（拿到大量注意力的詞元）",
         "Kept in English, as H2O names it (H2O is Heavy-Hitter Oracle); the literal 重擊者 reads as a "
         "baseball or boxing word. The first use glosses it in Chinese by what it is: 拿到大量注意力的詞元 "
         "(重度命中 read as a cache hit).",
         avoid_zh=(r"重擊者", r"重量級詞元", r"大戶詞元", r"重度命中")),
    Term("attention-received", "attention a position receives (what H2O adds up)", "拿到的注意力", "拿到注意力",
         "One verb for the attention a key gets from the queries, as the glossary's heavy hitter and eviction "
         "entries say it; 收到 and 得到 beside it on plate 7 and in the keep_positions demo read as three "
         "measures.",
         avoid_zh=(r"(?:收到|得到|獲得)(?:了)?[^，。；、\s]{0,6}注意力",)),
    Term("eviction", "eviction", "逐出", "逐出（eviction）",
         "The Taiwanese cache term for dropping an entry to make room (快取逐出); 驅逐 reads as expelling a "
         "person, and 淘汰 as a contest.",
         avoid_zh=(r"驅逐", r"淘汰")),
    Term("mla", "multi-head latent attention", "多頭潛在注意力", "多頭潛在注意力（multi-head latent attention，MLA）",
         "潛在 as in 潛在變數, the Taiwanese statistics word for latent; 隱 would suggest hidden states.",
         avoid_zh=(r"多頭隱", r"多頭潛空間")),
    Term("latent-vector", "latent vector", "潛在向量", "潛在向量（latent vector）",
         "Follows 多頭潛在注意力; 隱向量 is the mainland-leaning form.",
         avoid_zh=(r"隱向量", r"潛向量", r"隱空間向量")),
    Term("cross-layer", "cross-layer sharing", "跨層共享", "跨層共享（cross-layer sharing）",
         "共享 as in 字首共享 and 共享記憶體; 跨層共用 would give the site two words for sharing.",
         avoid_zh=(r"跨層共用", r"層間共享", r"層\S{0,3}共用")),
    # ------------------------------------------------------------------ serving many requests (plate 8)
    Term("batching", "batching", "批次處理", "批次處理（batching）",
         "The act of running many sequences in one step; 批次 (the batch row) stays the noun for the "
         "group itself. 批量 and 批處理 are mainland forms.",
         avoid_zh=(r"批量處理", r"成批處理")),
    Term("paging", "paging", "分頁", "分頁（paging）",
         "分頁 is the Taiwanese operating-systems term (分頁式記憶體管理); the paged KV cache is "
         "分頁 KV 快取. 頁式 and 分頁式 are the older textbook forms and read as a second concept.",
         avoid_en=(r"\bpaginat\w*",),
         avoid_zh=(r"頁式快取", r"分頁式")),
    Term("kv-block", "block", "區塊", "區塊（block）",
         "區塊 is Taiwan usage for a fixed-size block of storage, and it means only this: the paging "
         "block of plate 8 (vLLM's blocks). A Transformer block is a 層 (its halves 子層, row "
         "'layer') and KIVI's group of tokens a 詞元組 (row 'token-group'), so a reader never meets "
         "區塊 in three senses; 記憶體塊 and 快取塊 are literal renderings nobody writes.",
         avoid_zh=(r"記憶體塊", r"快取塊")),
    Term("block-table", "block table", "區塊表", "區塊表（block table）",
         "Follows 區塊; the operating system's page table is 分頁表, which plate 8 names only to "
         "draw the analogy.",
         avoid_zh=(r"(?<!區)塊表", r"區塊對照表", r"區塊映射表")),
    Term("shared-block", "shared block", "共享區塊", "共享區塊",
         "A block several sequences hold, as in 字首共享; 共用 stays for the common pool (共用的區塊池) "
         "and for heads that share a KV head, so 'shared block' has one word on plate 8, in its demo "
         "and in the glossary.",
         avoid_zh=(r"共用(?:的)?區塊(?!池)", r"共用、還沒填滿", r"共用那幾個區塊", r"由(?:好幾個|兩位|多個|幾個)\S{0,3}共用",
                   r"讀者(?:還能|，)?共用", r"取樣共用", r"和別人共用", r"共用[^\s，。；、：]{0,6}(?:提示詞|字首|開頭)")),
    Term("prefix-sharing", "prefix sharing", "字首共享", "字首共享（prefix sharing）",
         "字首 is the Taiwan form for a prefix: OpenCC's s2twp turns 前綴 into 字首, and the site's "
         "zh-TW check (tests/site/test_zh_tw.py) keeps to s2twp; Taiwanese CS texts use it too "
         "(字首樹, a trie). 共享 matches 共享記憶體 (shared memory).",
         avoid_zh=(r"前綴", r"字首共用", r"前置詞共享", r"[A-Z]、[A-Z][^。]{0,16}字首")),
    Term("copy-on-write", "copy-on-write", "寫入時複製", "寫入時複製（copy-on-write）",
         "The Taiwanese operating-systems translation; 拷貝 is mainland usage for 複製.",
         avoid_en=(r"\bcopy on write\b",),
         avoid_zh=(r"寫時複製", r"寫時拷貝", r"拷貝")),
    Term("preemption", "preemption", "搶佔", "搶佔（preemption）",
         "搶佔 as in 搶佔式多工, written with 佔 as the rest of the site writes 佔用; 搶占 is the "
         "variant form and 先佔 an older textbook word for the same idea.",
         avoid_en=(r"\bpre-emption\b",),
         avoid_zh=(r"搶占", r"先佔")),
    Term("ttft", "time to first token (TTFT)", "首詞元延遲", "首詞元延遲（TTFT）",
         "What a reader waits before the answer starts. 首 + 詞元 keeps the site's word for a token; "
         "首字延遲 counts characters (a bare 'token' is caught by the token row).",
         avoid_zh=(r"首字延遲", r"首令牌")),
    Term("tpot", "time per output token (TPOT)", "每詞元輸出時間", "每詞元輸出時間（TPOT）",
         "The pace of the answer after its first token: the time each further output token takes. "
         "Written with 詞元 like TTFT; 令牌 is a mainland rendering of token.",
         avoid_zh=(r"令牌",)),
    Term("static-batching", "static batching", "靜態批次處理", "靜態批次處理（static batching）",
         "A batch fixed when it starts: 靜態 as in 靜態配置, with 批次處理 as in the batching row.",
         avoid_zh=(r"靜態批量", r"靜態批處理")),
    Term("continuous-batching", "continuous batching", "持續批次處理", "持續批次處理（continuous batching）",
         "The batch keeps changing while it runs (Orca's iteration-level scheduling). 連續 is this "
         "site's word for contiguous memory (連續配置, 連續快取), so 連續批次 would read as a batch "
         "laid out in one piece; 持續 says it goes on and takes newcomers.",
         avoid_zh=(r"連續批次", r"連續批處理", r"動態批次")),
    Term("chunked-prefill", "chunked prefill", "分段預填", "分段預填（chunked prefill）",
         "A long prompt prefilled a segment at a time. 分塊 and 區塊 belong to the paged cache's "
         "blocks on the same plate; 分段 keeps the two ideas apart.",
         avoid_en=(r"\bchunked pre-fill\b",),
         avoid_zh=(r"分塊預填", r"切塊預填", r"分片預填")),
    # ------------------------------------------------------------------ decoding faster (plate 9)
    Term("speculative-decoding", "speculative decoding", "推測解碼", "推測解碼（speculative decoding）",
         "推測 says what the draft does: it guesses ahead and the model checks. 投機 (the mainland "
         "rendering) reads as opportunism or speculation on a market in Taiwan.",
         avoid_zh=(r"投機(?:解碼|取樣|採樣)", r"推測性解碼", r"猜測解碼")),
    Term("draft-model", "draft model", "草稿模型", "草稿模型（draft model）",
         "The small model that writes the guesses, as a draft (草稿) the model then checks; the "
         "checking model stays 模型 (目標模型 in some papers' translations).",
         avoid_zh=(r"草擬模型", r"起草模型", r"小模型草稿")),
    Term("acceptance", "acceptance", "接受", "接受（acceptance）",
         "A guess the model would have written itself is accepted (被接受); the first one it "
         "would not is rejected (被拒絕). 採納 and 接納 are other words for the same test.",
         avoid_zh=(r"接納率", r"採納率")),
    Term("flash-decoding", "Flash-Decoding", "Flash-Decoding", "Flash-Decoding（切分序列的解碼注意力）",
         "Kept as the authors' proper name, like FlashAttention; the gloss says what it splits.",
         avoid_en=(r"\bFlashDecoding\b", r"\bflash decoding\b"),
         avoid_zh=(r"快閃解碼", r"閃電解碼")),
    Term("pass", "pass (one run of the model over its input)", "執行", "一次執行",
         "A pass of the model is 模型每次執行 on plate 9 and in its demo; 驗證 is what a pass does with the guesses "
         "(用一次執行驗證), not the pass itself, and a prefill is a pass that verifies nothing. 前向計算 (the paging "
         "demo's 「跑了 17 次前向計算」) named the same pass a second way.",
         avoid_zh=(r"驗證次數", r"模型的驗證", r"(?:每|同一|這)次驗證", r"驗證[前後](?!的)", r"模型驗證 ?\S* ?次",
                   r"前向計算", r"前向傳遞")),
    Term("rollback", "roll back (the cache, after a rejection)", "倒回", "倒回",
         "Undoing the entries of rejected guesses: the cache is 倒回 (as a tape is rewound); 截斷 stays for the "
         "call that does it, truncate(n). 退回 reads as sending something back.",
         avoid_en=(r"\brewind\w*",),
         avoid_zh=(r"退回",)),
    Term("thread-block", "thread block (of a GPU kernel)", "執行緒區塊", "執行緒區塊（thread block）",
         "A kernel's unit of work on one SM. A bare 區塊 is the paging block of plate 8 (row 'kv-block'), so "
         "in a paragraph about SMs, kernels or thread blocks the GPU's block is always 執行緒區塊.",
         avoid_en=(r"(?<!thread )\bblocks?\b(?! table| size| map| pool| of (?:the )?pool)(?=[^.;\n]*\b(?:SMs?|query heads)\b)",
                   r"\b(?:SMs?|kernel)\b[^.;\n]*?(?<!thread )\bblocks?\b(?! table| size| map| pool)"),
         # within a paragraph that talks about SMs, kernels or thread blocks, a bare 區塊 is the GPU's too
         avoid_zh=(r"(?<!執行緒)區塊(?![表池大圖])(?=[^\n]*?(?:(?<![A-Za-z])SM(?![A-Za-z])|串流多處理器|同時工作|執行緒區塊))",
                   r"(?:(?<![A-Za-z])SM(?![A-Za-z])|kernel|串流多處理器|執行緒區塊)[^\n]*?(?<!執行緒)區塊(?![表池大圖])")),
    Term("rescale", "rescale factor (log-sum-exp merge)", "重新縮放倍數", "重新縮放倍數（rescale factor）",
         "exp(m_c − M), what a chunk is multiplied by before the merge; 縮放係數 is the quantization scale of plate 7 "
         "(row 'scale').",
         avoid_zh=(r"縮放係數(?=[^。\n]*(?:exp\(|合併|這一段|那一段))", r"縮放 exp", r"縮放係數是 1")),
    Term("lse-merge", "log-sum-exp merge", "log-sum-exp 合併", "log-sum-exp 合併（log-sum-exp merge）",
         "The formula's name stays in English (it names the maths: log of a sum of exponentials); "
         "合併 is what is done with the chunks.",
         avoid_zh=(r"對數和指數合併", r"LSE 融合")),
)

_BY_CONCEPT = {t.concept: t for t in TERMS}

# A gloss in parentheses after a term is where the other name belongs: not checked.
_GLOSS = re.compile(r"（[^（）]*）|\((?:[^()]*[\u4e00-\u9fff][^()]*)\)")


def term(concept: str) -> Term:
    """The row for ``concept`` (KeyError names the known concepts)."""
    try:
        return _BY_CONCEPT[concept]
    except KeyError:
        raise KeyError(f"no term {concept!r}; known: {', '.join(sorted(_BY_CONCEPT))}") from None


def variants(text: str, lang: str) -> list[tuple[str, str]]:
    """(concept, matched text) for every non-table name of a concept in ``text``.

    ``lang`` is "en" or "zh-TW"; parenthesised glosses are skipped (see the module doc).
    """
    plain = _GLOSS.sub(" ", text)
    found = []
    for t in TERMS:
        for pattern in (t.avoid_zh if lang == "zh-TW" else t.avoid_en):
            found += [(t.concept, m.group(0)) for m in re.finditer(pattern, plain)]
    return found
