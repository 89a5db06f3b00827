"""The shipped course model is good enough to teach with: the lessons' prompts and the map."""
import io
import os
import re
from importlib import resources

import numpy as np
import pytest

from engine import Generator, SamplingParams
from engine.course import course_model_metadata, load_course_model, read_model_file
from engine.training.corpus import SEMANTIC_GROUPS, build_documents, corpus_text


@pytest.fixture(scope="module")
def course():
    return load_course_model()


def next_token_top(course, prompt: str, k: int) -> list[str]:
    model, tok = course
    logits = model.forward(tok.encode(prompt))[-1]  # [V]
    return tok.pieces([int(i) for i in np.argsort(-logits)[:k]])


# --------------------------------------------------------------------------- the files


def test_shipped_files_are_small_float16_and_consistent(course):
    model, tok = course
    data = resources.files("engine").joinpath("data", "course_model.npz").read_bytes()
    assert len(data) <= 3 * 1024 * 1024
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        assert all(z[k].dtype == np.float16 for k in z.files if k not in ("config", "meta"))
    config, weights, meta = read_model_file(data)
    assert model.config == config and config.vocab_size == tok.vocab_size
    assert config.n_kv_heads < config.n_heads  # grouped-query attention, as the cache lesson shows
    assert model.config.dtype == "float32"
    assert np.array_equal(model.weights["embed"], weights["embed"])


def test_loader_is_cached(course):
    assert load_course_model() is course


def test_metadata_records_how_it_was_trained():
    meta = course_model_metadata()
    assert meta["settings"]["steps"] > 0 and meta["train_seconds"] > 0
    assert meta["final_loss"] < meta["first_loss"] / 5


# --------------------------------------------------------------------------- the prompts


def test_the_cat_sat_on_the_mat(course):
    assert next_token_top(course, "The cat sat on the", 1) == [" mat"]


def test_weather_word_chain(course):
    assert set(next_token_top(course, "今天天氣真", 3)) == {"好", "熱", "冷"}


@pytest.mark.parametrize("prompt,expected", [
    ("I drink milk", " tea"),
    ("The king and the", " queen"),
    ("國王和", "女"),
    ("The cat", " sat"),
])
def test_lesson_prompts_top3(course, prompt, expected):
    assert expected in next_token_top(course, prompt, 3)


def test_i_want_to_drink_something_drinkable(course):
    firsts = {w[0] for w in SEMANTIC_GROUPS["drinks"]["zh-TW"]}  # 奶, 珍, 布, 咖, 紅, 可
    top = next_token_top(course, "我想喝", 3)
    assert all(t in firsts for t in top), top


def test_greedy_continuation_reads_like_the_corpus(course):
    model, tok = course
    gen = Generator(model, tok, SamplingParams(temperature=0.0))
    gen.generate("The cat", max_new_tokens=20)
    text = "The cat" + gen.text
    sentences = [s.strip() for s in re.findall(r"[^.!?]*[.!?]", text)]
    assert len(sentences) >= 2, text
    corpus = corpus_text(build_documents())
    for s in sentences:
        assert s in corpus, (s, text)


# --------------------------------------------------------------------------- the semantic map


def map_accuracy(embed, tok) -> float:
    """Nearest-centroid accuracy of the word groups on the 2-D PCA map of ``embed`` [V, D].

    A word's point is the mean embedding of its tokens (English words as in a sentence,
    with their space: " king"); the PCA is the top two right singular vectors of the
    centred points; each point is assigned the group whose 2-D centroid is nearest.
    """
    embed = np.asarray(embed, dtype=np.float64)
    points, labels = [], []
    for g, langs in enumerate(SEMANTIC_GROUPS.values()):
        for lang, words in langs.items():
            for word in words:
                points.append(embed[tok.encode(" " + word if lang == "en" else word)].mean(axis=0))
                labels.append(g)
    points, labels = np.array(points), np.array(labels)  # [N, D], [N]
    centred = points - points.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    xy = centred @ vt[:2].T  # [N, 2]
    centroids = np.array([xy[labels == g].mean(axis=0) for g in range(len(SEMANTIC_GROUPS))])
    nearest = np.argmin(((xy[:, None, :] - centroids[None]) ** 2).sum(axis=-1), axis=1)
    return float((nearest == labels).mean())


def test_groups_separate_on_a_2d_pca_map(course):
    model, tok = course
    accuracy = map_accuracy(model.weights["embed"], tok)
    assert accuracy >= 0.9, f"nearest-centroid accuracy on the 2-D map: {accuracy:.2f}"


def test_map_is_learned_not_random(course):
    """The same measurement on the embeddings before training is far from separated."""
    from engine.training.grad import init_params

    model, tok = course
    init = init_params(model.config, course_model_metadata()["settings"]["seed"])["embed"]
    assert map_accuracy(init, tok) < 0.8


# --------------------------------------------------------------------------- reproduction


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("KV_RETRAIN") != "1",
                    reason="retrains the course model from scratch (minutes of CPU); set KV_RETRAIN=1")
def test_retraining_reproduces_the_shipped_model(tmp_path, course):
    from engine.training.train import main

    meta = course_model_metadata()
    assert main(["--out", str(tmp_path), "--steps", str(meta["settings"]["steps"]),
                 "--seed", str(meta["settings"]["seed"])]) == 0
    _, new, _ = read_model_file((tmp_path / "course_model.npz").read_bytes())
    model, _ = course
    for name, w in new.items():
        assert np.array_equal(w, model.weights[name]), name
