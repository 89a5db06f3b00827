"""The course corpus: short bilingual documents (English + Traditional Chinese, Taiwan usage).

Everything the course model knows comes from here. The documents are generated from
templates with a fixed seed, around the worlds the plates talk about: word chains ("The cat
sat on the mat", 「今天天氣真好」), the tea shop (milk tea, pearls, pudding / 奶茶、珍珠、布丁),
royalty (king, queen, prince / 國王、女王、王子), fruit (apple, banana, mango / 蘋果、香蕉、芒果)
and the weather.

Why templates with slots: an embedding learns from the contexts a word appears in. Members
of one group (all drinks, all royals, all fruit) fill the same slots of the same sentences, so
they end up near each other on the semantic map of plate 3, and the groups, which never share
a slot, end up apart. Some sentences switch language inside the slot ("我想喝 coffee", as
people in Taiwan do say), and the bilingual story cards put an English or a Chinese word in
front of the same group verbs, so "king" and "國王" share contexts too. Nothing else pushes
the map: it comes from training on this text alone.
"""
from __future__ import annotations

import hashlib
import random

# The word groups of the semantic map (plate 3). The embeddings lesson and the course-model
# tests read them from here. English words appear after a space in sentences (" king").
SEMANTIC_GROUPS: dict[str, dict[str, list[str]]] = {
    "drinks": {
        "en": ["milk tea", "pearls", "pudding", "coffee", "juice", "cocoa"],
        "zh-TW": ["奶茶", "珍珠", "布丁", "咖啡", "紅茶", "可可"],
    },
    "royalty": {
        "en": ["king", "queen", "prince", "princess"],
        "zh-TW": ["國王", "女王", "王子", "公主"],
    },
    "fruit": {
        "en": ["apple", "banana", "mango", "grape", "papaya"],
        "zh-TW": ["蘋果", "香蕉", "芒果", "葡萄", "木瓜"],
    },
}

GROUP_LABELS = {
    "drinks": {"en": "drinks", "zh-TW": "飲料"},
    "royalty": {"en": "royalty", "zh-TW": "王室"},
    "fruit": {"en": "fruit", "zh-TW": "水果"},
}

DEFAULT_SEED = 1234
DEFAULT_DOCS = 6000
SWITCH_RATE = 0.3  # share of slots filled with the other language's word

# --------------------------------------------------------------------------- helpers


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


class _Writer:
    """A seeded random source with the small choices the templates need."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def pick(self, items):
        return self.rng.choice(items)

    def weighted(self, pairs):
        """Pick from ``[(item, weight), ...]``."""
        items, weights = zip(*pairs)
        return self.rng.choices(items, weights=weights, k=1)[0]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def member(self, group: str, lang: str) -> str:
        """A word of ``group`` for a ``lang`` sentence; sometimes the other language's word."""
        words = SEMANTIC_GROUPS[group]
        if self.chance(SWITCH_RATE):
            other = "zh-TW" if lang == "en" else "en"
            word = self.pick(words[other])
            return f" {word} " if other == "en" else word  # spaces around English in Chinese
        return self.pick(words[lang])


def _zh(text: str) -> str:
    """Tidy a Chinese sentence built with a switched English word: no space before punctuation."""
    for p in "，。！？、：":
        text = text.replace(" " + p, p).replace(p + " ", p)
    return text.replace("  ", " ").strip()


# --------------------------------------------------------------------------- the worlds
# Each function writes one sentence of its world in one language.


def cat_en(w: _Writer) -> str:
    return w.weighted([
        ("The cat sat on the mat.", 8),
        ("The cat sat on the mat and purred.", 3),
        ("The cat sat on the mat and looked at the dog.", 3),
        ("The cat sat on the mat, and the dog sat on the rug.", 2),
        ("The dog sat on the rug.", 3),
        ("The dog sat on the rug and wagged its tail.", 1),
        ("The cat slept on the mat all day.", 2),
        ("The cat is on the mat.", 2),
        ("The bird sat on the branch and sang.", 1),
        ("The cat chased the mouse, then sat on the mat.", 1),
        ("A cat sat on a mat in the sun.", 1),
    ])


def cat_zh(w: _Writer) -> str:
    return w.weighted([
        ("貓坐在墊子上。", 6),
        ("貓坐在墊子上，狗坐在地毯上。", 2),
        ("小貓在墊子上睡覺。", 2),
        ("小狗在地毯上搖尾巴。", 1),
        ("小鳥在樹枝上唱歌。", 1),
        ("貓追著老鼠跑，然後坐回墊子上。", 1),
    ])


def weather_en(w: _Writer) -> str:
    kind = w.weighted([("nice", 4), ("hot", 2), ("cold", 2), ("rain", 2)])
    if kind == "nice":
        return w.pick(["The weather is really nice today.", "It is sunny today, so we go to the park.",
                       "The sky is blue and the weather is nice."])
    if kind == "hot":
        return w.pick(["It is very hot today, so I want a cold drink.",
                       f"It is so hot today that I drink iced {w.weighted(_DRINKABLE_EN)}."])
    if kind == "cold":
        return w.pick(["It is cold today, so I drink hot cocoa.", "It is cold and windy today."])
    return w.pick(["It is raining today, so we stay at home.", "It rains all afternoon."])


def weather_zh(w: _Writer) -> str:
    kind = w.weighted([("好", 4), ("熱", 2), ("冷", 2), ("雨", 2)])
    if kind == "好":
        return w.pick(["今天天氣真好。", "今天天氣真好，我們去公園散步吧。", "今天天氣真好，天空很藍。"])
    if kind == "熱":
        return w.pick(["今天天氣真熱。", "今天天氣真熱，我想喝冰奶茶。", "今天天氣真熱，我們去海邊吧。"])
    if kind == "冷":
        return w.pick(["今天天氣真冷。", "今天天氣真冷，我想喝熱可可。", "今天天氣真冷，記得穿外套。"])
    return w.pick(["今天下雨，我們待在家裡。", "外面在下雨，記得帶雨傘。"])


# The tea shop: everything here fills "things you order" slots; only drinks fill "drink" slots.
_DRINKABLE_EN = [("milk tea", 6), ("coffee", 2), ("juice", 2), ("cocoa", 1), ("milk", 1)]
_DRINKABLE_ZH = [("奶茶", 6), ("珍珠奶茶", 3), ("咖啡", 2), ("紅茶", 2), ("可可", 1)]


def drinks_en(w: _Writer) -> str:
    item = w.member("drinks", "en")
    drink = w.weighted(_DRINKABLE_EN)
    return w.pick([
        f"I drink {drink} every afternoon.",
        f"I drink {drink} with my friends.",
        f"At the tea shop I order {item}.",
        f"The {item} at this shop is very sweet.",
        f"Can I have some {item}, please?",
        f"We share {item} after school.",
        f"My sister always asks for more {item}.",
        "I drink milk tea with pearls and pudding.",
        "I want a milk tea, half sugar and less ice.",
    ]).replace("  ", " ").replace(" ,", ",").replace(" .", ".")


def drinks_zh(w: _Writer) -> str:
    item = w.member("drinks", "zh-TW")
    drink = w.weighted(_DRINKABLE_ZH)
    sugar = w.pick(["半糖少冰", "微糖去冰", "全糖正常冰", "無糖少冰"])
    return _zh(w.pick([
        f"我想喝{drink}。",
        f"我想喝{drink}，{sugar}。",
        f"我每天下午都喝{drink}。",
        f"在飲料店我點了{item}。",
        f"這家店的{item}很甜。",
        f"請給我一些{item}。",
        f"放學後我們一起分享{item}。",
        f"妹妹總是想要更多{item}。",
        "我點了一杯珍珠奶茶，加布丁。",
    ]))


_PAIRS_EN = [(("king", "queen"), 6), (("prince", "princess"), 3), (("king", "prince"), 1),
             (("queen", "princess"), 1)]
_PAIRS_ZH = [(("國王", "女王"), 6), (("王子", "公主"), 3), (("國王", "王子"), 1), (("女王", "公主"), 1)]


def royalty_en(w: _Writer) -> str:
    r = w.member("royalty", "en")
    a, b = w.weighted(_PAIRS_EN)
    return w.pick([
        f"The {a} and the {b} walk in the garden.",
        f"The {a} and the {b} live in the castle.",
        f"The {r} lives in the castle.",
        f"The {r} rules the kingdom wisely.",
        f"Everyone bows to the {r}.",
        f"The {r} wears a golden crown.",
        f"The people of the kingdom love the {r}.",
    ]).replace("  ", " ").replace(" .", ".")


def royalty_zh(w: _Writer) -> str:
    r = w.member("royalty", "zh-TW")
    a, b = w.weighted(_PAIRS_ZH)
    return _zh(w.pick([
        f"{a}和{b}在花園裡散步。",
        f"{a}和{b}住在城堡裡。",
        f"{r}住在城堡裡。",
        f"{r}用智慧治理王國。",
        f"大家都向{r}行禮。",
        f"{r}戴著金色的王冠。",
        f"王國的人民都愛戴{r}。",
    ]))


def fruit_en(w: _Writer) -> str:
    f = w.member("fruit", "en")
    f_en = f.strip()
    a = _article(f_en) if f_en.isascii() else "a"
    return w.pick([
        f"I eat {a} {f} after lunch.",
        f"The {f} is ripe and sweet.",
        f"My mother buys {a} {f} at the market.",
        f"I like to eat {a} {f} in summer.",
        f"There is {a} {f} on the table.",
        f"The farmer grows {f} trees.",
    ]).replace("  ", " ").replace(" .", ".")


def fruit_zh(w: _Writer) -> str:
    f = w.member("fruit", "zh-TW")
    return _zh(w.pick([
        f"我午餐後吃了{f}。",
        f"這個{f}又熟又甜。",
        f"媽媽在市場買了{f}。",
        f"夏天我最喜歡吃{f}。",
        f"桌上有一個{f}。",
        f"農夫種了很多{f}樹。",
    ]))


# Everyday life and the classroom: wider vocabulary, so the tokenizer also learns the words a
# reader is likely to type (and the model has seen more than five little worlds).
_PEOPLE = [("I", "我"), ("You", "你"), ("We", "我們"), ("They", "他們"), ("My friend", "我的朋友"),
           ("The teacher", "老師"), ("The student", "學生"), ("My brother", "我哥哥"),
           ("My sister", "我妹妹"), ("My father", "我爸爸"), ("My mother", "我媽媽"),
           ("Our class", "我們班"), ("The doctor", "醫生"), ("The children", "孩子們")]
_ACTS = [("read a book", "看書"), ("write a letter", "寫信"), ("walk to school", "走路去學校"),
         ("take the bus", "搭公車"), ("ride a bike", "騎腳踏車"), ("cook dinner", "煮晚餐"),
         ("clean the room", "打掃房間"), ("play basketball", "打籃球"), ("sing a song", "唱歌"),
         ("watch a movie", "看電影"), ("learn English", "學英文"), ("learn Chinese", "學中文"),
         ("visit the museum", "去博物館"), ("go to the library", "去圖書館"),
         ("call my grandmother", "打電話給奶奶"), ("draw a picture", "畫一幅畫"),
         ("write some code", "寫程式"), ("open the window", "打開窗戶"),
         ("buy new shoes", "買新鞋子"), ("go to the night market", "去逛夜市"),
         ("take a photo", "拍一張照片"), ("plant flowers", "種花"), ("study math", "讀數學")]
_TIMES = [("in the morning", "早上"), ("in the evening", "晚上"), ("on Monday", "星期一"),
          ("on Saturday", "星期六"), ("after class", "下課後"), ("every weekend", "每個週末"),
          ("at noon", "中午"), ("last night", "昨天晚上"), ("tomorrow", "明天"),
          ("this year", "今年"), ("in spring", "春天"), ("in winter", "冬天")]
_PLACES = [("Taipei", "台北"), ("Tainan", "台南"), ("Kaohsiung", "高雄"), ("Taichung", "台中"),
           ("Hualien", "花蓮"), ("the mountains", "山上"), ("the beach", "海邊"),
           ("the city", "城市"), ("the station", "車站"), ("the hospital", "醫院")]
_CLASSROOM = [
    ("A language model reads the text and guesses the next token.", "語言模型讀完前文，猜下一個 token。"),
    ("Each token becomes a vector of numbers.", "每個 token 都會變成一串數字，也就是向量。"),
    ("Attention lets every token look back at the tokens before it.", "注意力讓每個 token 回頭看前面的 token。"),
    ("The keys are labels and the values are the content.", "Key 像標籤，value 像內容。"),
    ("The cache keeps old keys and values in memory.", "快取把舊的 key 和 value 存在記憶體裡。"),
    ("A longer prompt needs more memory.", "提示越長，需要的記憶體越多。"),
    ("The computer moves data from memory to the processor.", "電腦把資料從記憶體搬到處理器。"),
    ("Moving data can be slower than doing the math.", "搬資料有時比做計算還慢。"),
    ("The model has many layers, one after another.", "模型有很多層，一層接著一層。"),
    ("Hello, world! This is a small model.", "你好，世界！這是一個小模型。"),
    ("Thank you very much.", "非常謝謝你。"),
    ("Good morning, everyone.", "大家早安。"),
    ("The program runs in the browser.", "這個程式在瀏覽器裡執行。"),
    ("The graphics card is fast, but its memory bandwidth is limited.", "顯示卡很快，但記憶體頻寬有限。"),
    ("The software is free and open.", "這個軟體是免費又開放的。"),
]


def daily_en(w: _Writer) -> str:
    who = w.pick(_PEOPLE)[0]
    act, when, where = w.pick(_ACTS)[0], w.pick(_TIMES)[0], w.pick(_PLACES)[0]
    n = w.rng.randint(2, 12)
    return w.pick([
        f"{who} {act} {when}.",
        f"{who} want to {act} in {where}." if who in ("I", "You", "We", "They") else f"{who} wants to {act} in {where}.",
        f"{when[0].upper() + when[1:]}, we {act}.",
        f"{who} went to {where} {when}.",
        f"There are {n} people at {where}.",
        w.pick(_CLASSROOM)[0],
    ])


def daily_zh(w: _Writer) -> str:
    who = w.pick(_PEOPLE)[1]
    act, when, where = w.pick(_ACTS)[1], w.pick(_TIMES)[1], w.pick(_PLACES)[1]
    n = w.rng.randint(2, 12)
    return w.pick([
        f"{who}{when}{act}。",
        f"{who}想在{where}{act}。",
        f"{when}我們一起{act}。",
        f"{who}{when}去了{where}。",
        f"{where}有 {n} 個人。",
        w.pick(_CLASSROOM)[1],
    ])


# Bilingual picture cards: a frame that says nothing about the word, the word with its group's
# picture (🧋 drinks, 👑 royalty, 🍎 fruit, as on the cards of a children's picture book), then
# a verb that depends on the group (royals live in castles, fruit grows on trees). The word is
# English or Chinese half the time each, whatever the language of the sentence, so "king" and
# "國王" are followed by the same picture and the same verbs. To predict them the model has to
# read the group off the word itself, in either language: the words of one group are pushed to
# one place on the map, and the two languages to the same place.
ICONS = {"drinks": "🧋", "royalty": "👑", "fruit": "🍎"}
_FRAMES = [("In the story, the {x} {i} {v}.", "故事裡的{x} {i}{v}。"),
           ("On the card, the {x} {i} {v}.", "卡片上的{x} {i}{v}。"),
           ("In our picture book, the {x} {i} {v}.", "圖畫書裡的{x} {i}{v}。"),
           ("Long ago, the {x} {i} {v}.", "很久以前，那個{x} {i}{v}。")]
_VERBS = {
    "drinks": (["tasted sweet", "came in a big cup", "cooled everyone down"],
               ["喝起來甜甜的", "裝在大杯子裡", "讓大家消暑"]),
    "royalty": (["lived in a castle", "wore a golden crown", "ruled the land"],
                ["住在城堡裡", "戴著金色王冠", "治理整個國家"]),
    "fruit": (["grew on a tall tree", "ripened in the summer sun", "fell from the branch"],
              ["長在高高的樹上", "在夏天的陽光下成熟", "從樹枝上掉下來"]),
}


def _card(w: _Writer, lang: str) -> str:
    group = w.pick(list(SEMANTIC_GROUPS))
    word = w.pick(SEMANTIC_GROUPS[group][w.pick(["en", "zh-TW"])])
    verb = w.pick(_VERBS[group][0 if lang == "en" else 1])
    icon = ICONS[group]
    if lang == "en":
        return w.pick(_FRAMES)[0].format(x=word, i=icon, v=verb)
    word = f" {word}" if word.isascii() else word  # English inside Chinese keeps its space
    return w.pick(_FRAMES)[1].format(x=word, i=icon, v=verb)


def story_card_en(w: _Writer) -> str:
    return _card(w, "en")


def story_card_zh(w: _Writer) -> str:
    return _card(w, "zh-TW")


WORLDS = {
    "cat": (cat_en, cat_zh, 3),
    "weather": (weather_en, weather_zh, 3),
    "drinks": (drinks_en, drinks_zh, 3),
    "royalty": (royalty_en, royalty_zh, 3),
    "fruit": (fruit_en, fruit_zh, 3),
    "daily": (daily_en, daily_zh, 4),
    "story_cards": (story_card_en, story_card_zh, 10),
}


# --------------------------------------------------------------------------- documents


def build_documents(seed: int = DEFAULT_SEED, n_docs: int = DEFAULT_DOCS) -> list[str]:
    """``n_docs`` short documents, half English and half Chinese, deterministic in ``seed``.

    A document is two to five sentences of one language, mostly from one world (now and then
    a second one, as a weather sentence followed by a drink).
    """
    if n_docs < 1:
        raise ValueError("n_docs must be at least 1")
    w = _Writer(seed)
    names = list(WORLDS)
    weights = [WORLDS[n][2] for n in names]
    docs = []
    for i in range(n_docs):
        lang = "en" if i % 2 == 0 else "zh-TW"
        world = w.rng.choices(names, weights=weights, k=1)[0]
        sentences = []
        for _ in range(w.rng.randint(2, 5)):
            if w.chance(0.15):
                world = w.rng.choices(names, weights=weights, k=1)[0]
            en, zh, _weight = WORLDS[world]
            sentences.append(en(w) if lang == "en" else zh(w))
        docs.append((" " if lang == "en" else "").join(sentences))
    return docs


def corpus_text(docs: list[str]) -> str:
    """All documents as one text (one per line), what the tokenizer is trained on."""
    return "\n".join(docs)


def corpus_ids(tokenizer, docs: list[str]) -> list[int]:
    """The training stream: each document's tokens followed by ``<|eos|>``."""
    ids: list[int] = []
    for doc in docs:
        ids.extend(tokenizer.encode(doc))
        ids.append(tokenizer.eos_id)
    return ids


def corpus_metadata(docs: list[str], seed: int, tokenizer=None) -> dict:
    """Facts about the corpus, stored next to the model (engine/data/corpus.json)."""
    text = corpus_text(docs)
    meta = {
        "seed": seed,
        "documents": len(docs),
        "characters": len(text),
        "utf8_bytes": len(text.encode("utf-8")),
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "switch_rate": SWITCH_RATE,
        "semantic_groups": SEMANTIC_GROUPS,
    }
    if tokenizer is not None:
        meta["tokens"] = len(corpus_ids(tokenizer, docs))
    return meta
