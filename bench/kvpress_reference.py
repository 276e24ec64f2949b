"""kvpress's own losses under the compress protocol, for comparison with `attention-sandbox frontier --protocol
compress --json`. kvpress is never a dependency of the app: run this in a separate venv that has it (see
../shared/REFERENCE.md "Token eviction": kvpress 0.5.5 with transformers 5.2.0 and the same CPU torch):

    python bench/kvpress_reference.py --model-dir ~/.cache/attention-sandbox/smollm2-135m --json

The protocol, as core/models/evict/ runs it: float32, SDPA (eager for observed attention, which needs the
weights), the first 1,024 tokens of resources/texts/eval_alice.txt prefilled under the press, the next 256
teacher-forced at positions 1,024.., the mean cross-entropy of continuation tokens 2..256."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

TEXT = Path(__file__).resolve().parents[1] / "resources" / "texts" / "eval_alice.txt"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--ratios", default="0.25,0.5,0.75,0.875")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import kvpress
    from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

    presses = {"streaming": kvpress.StreamingLLMPress, "snapkv": kvpress.SnapKVPress,
               "h2o": kvpress.ObservedAttentionPress, "tova": kvpress.TOVAPress, "knorm": kvpress.KnormPress,
               "expected": kvpress.ExpectedAttentionPress}
    tok = AutoTokenizer.from_pretrained(args.model_dir)
    ids = tok(TEXT.read_text(encoding="utf-8"), add_special_tokens=False)["input_ids"]
    C, N = 1024, 256
    context, continuation = torch.tensor([ids[:C]]), torch.tensor([ids[C:C + N]])
    models = {impl: AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32, attn_implementation=impl)
              .eval() for impl in ("sdpa", "eager")}

    def loss(press_cls: type | None, ratio: float) -> float:
        model = models["eager" if press_cls is kvpress.ObservedAttentionPress else "sdpa"]
        cache = DynamicCache()
        with torch.inference_mode():
            if press_cls is None:
                model(input_ids=context, past_key_values=cache)
            else:
                with press_cls(compression_ratio=ratio)(model):
                    model(input_ids=context, past_key_values=cache)
            positions = torch.arange(C, C + N)[None]
            logits = model(input_ids=continuation, past_key_values=cache, position_ids=positions).logits
        return float(F.cross_entropy(logits[0, :-1].float(), continuation[0, 1:]))

    base = loss(None, 0.0)
    rows = [{"method": "baseline", "ratio": 0.0, "loss": base}]
    for name, cls in presses.items():
        for r in (float(x) for x in args.ratios.split(",")):
            value = loss(cls, r)
            rows.append({"method": name, "ratio": r, "loss": value, "loss_change": value - base})
            print(f"{name} {r}: {value - base:+.5f}", file=sys.stderr, flush=True)
    out = {"kvpress": kvpress.__version__ if hasattr(kvpress, "__version__") else "0.5.5", "rows": rows}
    print(json.dumps(out, indent=1) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
