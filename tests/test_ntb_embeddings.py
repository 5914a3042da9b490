"""The question-match embedding model is a setting (``ntb.embedding_model``): MiniLM by
default, paraphrase-MiniLM-L3-v2 (extra ``ntb-embeddings``) as the second offline model; the
model used is recorded with every ask step and score."""
import asyncio
import importlib.metadata

import numpy as np
import pytest

from harness.models import embeddings
from harness.models.embeddings import EmbeddingModelMissing, check_embedder, cosine, embedder_for
from harness.ntb import scoring


def paraphrase_installed() -> bool:
    try:
        importlib.metadata.distribution(embeddings.PARAPHRASE_PACKAGE)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


needs_paraphrase = pytest.mark.skipif(not paraphrase_installed(),
                                      reason="pip install -e '.[ntb-embeddings]' for the second model")


def test_minilm_is_the_default_and_names_are_checked():
    assert embedder_for("minilm") is embeddings.embed
    assert scoring.embedder_id(embedder_for("minilm")).startswith("all-MiniLM-L6-v2")
    with pytest.raises(ValueError, match="unknown embedding model"):
        embedder_for("bert-base-nli-stsb-mean-tokens")
    with pytest.raises(ValueError, match="unknown embedding model"):
        check_embedder("nope")


def test_a_missing_second_model_names_the_install_command(monkeypatch):
    monkeypatch.setattr(embeddings, "PARAPHRASE_PACKAGE", "no-such-embedding-package")
    monkeypatch.setattr(embeddings, "PARAPHRASE_FILE", "no_such_embedding_package/model.onnx")
    with pytest.raises(EmbeddingModelMissing, match=r"\.\[ntb-embeddings\]"):
        check_embedder("paraphrase-minilm-l3")


def test_a_run_with_a_missing_model_stores_nothing(tmp_path, monkeypatch):
    from harness.compose import Runtime
    from harness.config import load_config
    from harness.ntb.batch import arun_ntb
    from store import StoreReader
    monkeypatch.setattr(embeddings, "PARAPHRASE_PACKAGE", "no-such-embedding-package")
    monkeypatch.setattr(embeddings, "PARAPHRASE_FILE", "no_such_embedding_package/model.onnx")
    cfg = load_config(overrides={"store": str(tmp_path / "s.sqlite"),
                                 "ntb": {"ids": ["IMKI/1"], "embedding_model": "paraphrase-minilm-l3"}})
    with Runtime(cfg, lambda role, spec: None) as runtime, pytest.raises(EmbeddingModelMissing):
        asyncio.run(arun_ntb(runtime))
    assert StoreReader(cfg.store, must_exist=False).runs() == []


@needs_paraphrase
def test_paraphrase_minilm_gives_sensible_unit_vectors():
    model = embedder_for("paraphrase-minilm-l3")
    assert model is embedder_for("paraphrase-minilm-l3")  # shared
    assert scoring.embedder_id(model) == f"paraphrase-MiniLM-L3-v2-onnx@{embeddings.PARAPHRASE_PACKAGE}==0.2.1"
    a, b, c = model(["What is the hotel id?", "Could you tell me the ID of the hotel?", "I like cats very much."])
    assert len(a) == 384 and abs(np.linalg.norm(a) - 1) < 1e-5
    assert cosine(a, b) > 0.7 and cosine(a, c) < 0.2
    assert model(["What is the hotel id?"])[0] == pytest.approx(a, abs=1e-6)
    assert model([]) == []


@needs_paraphrase
def test_paraphrase_pooling_equals_the_exported_sentence_embedding():
    """The ONNX export also returns sentence-transformers' pooled vector: ours must equal it."""
    import onnxruntime as ort
    from tokenizers import Tokenizer
    model_path, tokenizer_path = embeddings.ParaphraseMiniLMEmbedder.files()
    session = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    tok = Tokenizer.from_file(str(tokenizer_path))
    tok.enable_truncation(max_length=128)
    enc = tok.encode("Which date should the Billboard chart be for?")
    outputs = session.run(None, {"input_ids": np.array([enc.ids]), "attention_mask": np.array([enc.attention_mask])})
    [pooled] = [o for o in outputs if o.dtype == np.float32 and o.ndim == 2]
    ours = np.array(embedder_for("paraphrase-minilm-l3")(["Which date should the Billboard chart be for?"])[0])
    assert ours == pytest.approx(pooled[0] / np.linalg.norm(pooled[0]), abs=1e-5)


@needs_paraphrase
def test_a_run_records_the_chosen_embedding_model(tmp_path):
    from tests.test_ntb_loop import ideal
    from tests.test_ntb_variants import run_variant
    reader, run_id, figures, _ = run_variant(tmp_path, ideal("IMKI/2"), ["IMKI/2"], "current",
                                             embedding_model="paraphrase-minilm-l3")
    f = figures["IMKI/2"]["figures"]
    assert f["embedding_model"].startswith("paraphrase-MiniLM-L3-v2") and f["A1"] == 1
    [i] = reader.interactions(run_id)
    import json
    ask = json.loads(reader.turns(i["id"])[0]["extra_json"])
    assert ask["embedding_model"] == f["embedding_model"] and ask["similarity"] > 0.99


@needs_paraphrase
def test_score_noisytoolbench_takes_the_embedding_model_and_ask_match(tmp_path, capsys):
    import json
    from harness.cli.main import main
    from tests.test_ntb_scoring import case, ideal_steps
    src = tmp_path / "t.jsonl"
    src.write_text(json.dumps({"category": "IMKI", "query_id": 2, "steps": ideal_steps(case("IMKI", 2))}) + "\n")
    assert main(["score", "noisytoolbench", "--no-judge", "--embedding-model", "paraphrase-minilm-l3",
                 "--ask-match", "question", "--transcripts", str(src), "--out", str(tmp_path / "o.csv")]) == 0
    printed = capsys.readouterr().out
    assert '"embedding_model": "paraphrase-MiniLM-L3-v2' in printed and '"ask_match": "question"' in printed
    assert (tmp_path / "o.csv").read_text().count("\n") == 2  # header and the case
