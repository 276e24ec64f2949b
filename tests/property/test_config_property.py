"""Every generated configuration is either accepted with counts equal to the reference formulas
(written again here, independently of core/kinds/standard/counts.py) or refused with a sentence, in core and
through the CLI; nothing else escapes."""

import json

from hypothesis import given
from hypothesis import strategies as st

from core.arch.config import AttentionConfig
from core.counts import flop_counts, kv_cache_bytes, param_counts
from tests.property.cli_run import run_main

BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# The README's documented maxima, written again here (not imported from core.arch.config).
LIMITS = {"d_model": 2**20, "n_heads": 2**16, "n_kv_heads": 2**16, "seq_len": 2**30, "batch_size": 2**20,
          "n_layers": 4096}
sizes = st.one_of(
    st.integers(min_value=-3, max_value=64),
    st.sampled_from([128, 256, 384, 576, 768, 1024, 4096, 12288]),
    st.integers(min_value=65, max_value=10**6),
    st.integers(min_value=10**9, max_value=10**15),
    st.integers(min_value=2**40, max_value=10**400),  # where a divisor search or a float would hang or overflow
    st.integers(),  # any whole number, negative ones included
)
odd = st.one_of(st.floats(allow_nan=True), st.text(max_size=4), st.booleans(), st.none())
random_fields = st.fixed_dictionaries({
    "d_model": st.one_of(sizes, odd),
    "n_heads": st.one_of(sizes, odd),
    "n_kv_heads": st.one_of(sizes, st.none(), odd),
    "seq_len": st.one_of(sizes, odd),
    "batch_size": st.one_of(sizes, odd),
    "n_layers": st.one_of(sizes, odd),
    "dtype": st.one_of(st.sampled_from(list(BYTES)), st.text(max_size=8)),
    "causal": st.one_of(st.booleans(), odd),
    "bias": st.one_of(st.booleans(), odd),
    "phase": st.one_of(st.sampled_from(["prefill", "decode"]), st.text(max_size=8)),
})


@st.composite
def valid_fields(draw):
    """Configurations built to be valid, huge ones included, so that acceptance is exercised too."""
    kv = draw(st.integers(1, 64))
    group = draw(st.integers(1, 16))
    head_dim = draw(st.integers(1, 512))
    return {"d_model": kv * group * head_dim, "n_heads": kv * group,
            "n_kv_heads": draw(st.sampled_from([kv, None])) if group == 1 else kv,
            "seq_len": draw(sizes.filter(lambda v: v >= 1)), "batch_size": draw(st.integers(1, 10**6)),
            "n_layers": draw(st.integers(1, 1000)), "dtype": draw(st.sampled_from(list(BYTES))),
            "causal": draw(st.booleans()), "bias": draw(st.booleans()),
            "phase": draw(st.sampled_from(["prefill", "decode"]))}


fields = st.one_of(random_fields, valid_fields())


def reference(f):
    d, H, T, B, L = f["d_model"], f["n_heads"], f["seq_len"], f["batch_size"], f["n_layers"]
    K = H if f["n_kv_heads"] is None else f["n_kv_heads"]
    h, b = d // H, BYTES[f["dtype"]]
    params = 2 * d * h * (H + K) + ((H + 2 * K) * h + d if f["bias"] else 0)
    tq = T if f["phase"] == "prefill" else 1
    proj = 2 * B * tq * d * (H * h + 2 * K * h) + 2 * B * tq * H * h * d
    if f["phase"] == "prefill":
        core = 4 * B * H * T * T * h // (2 if f["causal"] else 1)
    else:
        core = 4 * B * H * T * h
    return {"params": params, "projections": proj, "attention": core, "kv": 2 * L * K * h * T * B * b}


def valid(f) -> bool:
    ints = ["d_model", "n_heads", "seq_len", "batch_size", "n_layers"] + ([] if f["n_kv_heads"] is None else ["n_kv_heads"])
    if any(type(f[k]) is not int or not 1 <= f[k] <= LIMITS[k] for k in ints):
        return False
    K = f["n_heads"] if f["n_kv_heads"] is None else f["n_kv_heads"]
    return (f["d_model"] % f["n_heads"] == 0 and f["n_heads"] % K == 0 and f["dtype"] in BYTES
            and f["phase"] in ("prefill", "decode") and type(f["causal"]) is bool and type(f["bias"]) is bool)


@given(fields)
def test_core_accepts_exactly_the_valid_configs_with_reference_counts(f):
    try:
        cfg = AttentionConfig(**f)
    except ValueError as exc:
        assert not valid(f), f
        msg = str(exc)
        assert msg.endswith(".") and len(msg) > 20 and "\n" not in msg
        return
    assert valid(f), f
    ref = reference(f)
    assert param_counts(cfg).total == ref["params"]
    fl = flop_counts(cfg)
    assert (fl.projections, fl.attention) == (ref["projections"], ref["attention"])
    assert kv_cache_bytes(cfg).bytes_total == ref["kv"]


FLAGS = {"d_model": "--d-model", "n_heads": "--heads", "n_kv_heads": "--kv-heads", "seq_len": "--seq-len",
         "batch_size": "--batch", "n_layers": "--layers", "dtype": "--dtype", "phase": "--phase"}


@given(fields)
def test_cli_accepts_or_exits_2_with_one_sentence(f):
    argv = ["report", "--json"]
    for key, flag in FLAGS.items():
        value = f[key]
        if value is None:
            continue
        argv += [flag, str(value)]
    for key in ("causal", "bias"):
        if isinstance(f[key], bool):
            argv.append(f"--{key}" if f[key] else f"--no-{key}")
    code, out, err = run_main(argv)
    if code == 0:
        report = json.loads(out)
        c = report["config"]
        g = {"d_model": c["d_model"], "n_heads": c["n_heads"], "n_kv_heads": c["n_kv_heads"], "seq_len": c["seq_len"],
             "batch_size": c["batch_size"], "n_layers": c["n_layers"], "dtype": c["dtype"], "causal": c["causal"],
             "bias": c["bias"], "phase": c["phase"]}
        ref = reference(g)
        assert report["params"]["total"] == ref["params"] and report["kv_cache"]["bytes_total"] == ref["kv"]
        assert report["flops"]["attention"] == ref["attention"]
    else:
        assert code == 2, (argv, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("attention-sandbox: error: ") and "Traceback" not in lines[0]
