import json

import numpy as np

from core.models.head_roles import ROLES, all_layer_scores, induction_probe_ids
from core.models.inspect import encode, encode_ids, run


def test_smollm2_has_an_induction_head_on_the_induction_probe(smollm2):
    ids, repeat = induction_probe_ids(smollm2.tokenizer.vocab_size, seed=0, bos=smollm2.tokenizer.bos_token_id)
    out = run(smollm2, encode_ids(smollm2, ids), 0)
    scores = all_layer_scores(out.attentions, ids, repeat)
    assert scores["induction"].shape == (30, 9)
    assert scores["induction"].max() > 0.5
    # Same tokens, no repetition structure: the detector finds no induction.
    text_scores = all_layer_scores(out.attentions, list(range(len(ids))))
    assert text_scores["induction"].max() == 0.0


def test_a_real_model_has_a_previous_token_head(minilm):
    enc = encode(minilm, "The chef who trained in Lucknow cooked biryani and rice for the guests")
    out = run(minilm, enc, 0)
    scores = all_layer_scores(out.attentions, enc["input_ids"][0].tolist())
    assert scores["previous"].max() > 0.5
    for role in ROLES:
        assert np.all(np.isfinite(scores[role]))


def test_heads_cli_json(capsys, smollm2):
    from sandbox.cli.main import main

    assert main(["heads", "--model", "smollm2-135m", "--probe", "induction", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["probe"] == "induction" and len(data["tokens"]) == 101
    assert set(data["scores"]) == set(ROLES) and len(data["scores"]["induction"]) == 30
    assert len(data["scores"]["induction"][0]) == 9 and max(max(r) for r in data["scores"]["induction"]) > 0.5
