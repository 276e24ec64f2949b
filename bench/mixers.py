"""The recurrent mixers beside softmax attention of the same width, and beside transformers' own torch path of the same
mixer with the same weights, in one process.

Each mixer (Gated DeltaNet, Mamba-2) at a CPU-sized width (--d, default 1024; heads as below): its prefill of T
tokens (T = 1k, 4k, 16k) in our chunked form and in transformers' module (Qwen3NextGatedDeltaNet,
NemotronHMamba2Mixer: their torch fallbacks on a CPU), and one decode step with T = 1k and 32k tokens behind it (the
mixer's step is constant in T; the softmax layer reads T cached keys). The softmax layer is MHA of the mixer's heads
and head width (SDPA, causal). Ratios: ours / transformers (prefill) and mixer / SDPA (prefill and decode).
--json prints the rows.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.arch.config import AttentionConfig  # noqa: E402
from core.arch.layer import LayerSpec  # noqa: E402
from core.kinds.gated_deltanet.layer import GDNLayer  # noqa: E402
from core.kinds.gated_deltanet.spec import GDNWidths  # noqa: E402
from core.kinds.mamba2.layer import Mamba2Layer  # noqa: E402
from core.kinds.mamba2.spec import Mamba2Widths  # noqa: E402
from core.kinds.standard.layer import AttentionLayer  # noqa: E402
from core.timing.timer import measure  # noqa: E402

PREFILL_T = (1024, 4096, 16384)
DECODE_T = (1024, 32768)


def mixers(d: int) -> list[tuple[str, LayerSpec, object, object]]:
    """(name, spec, our layer, transformers' module with its weights)."""
    import transformers
    from transformers.models.nemotron_h.modeling_nemotron_h import NemotronHMamba2Mixer
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet

    out = []
    heads = max(d // 256, 1)
    gdn = LayerSpec(2 * heads, heads, 128, widths=GDNWidths(128, 128, 4))  # Qwen3-Next's shape: 2 value heads a key head
    ours = GDNLayer(d, gdn).eval()
    ref = Qwen3NextGatedDeltaNet(transformers.Qwen3NextConfig(
        hidden_size=d, linear_num_key_heads=heads, linear_num_value_heads=2 * heads, num_hidden_layers=1,
        layer_types=["linear_attention"]), 0).eval()
    ref.load_state_dict(ours.state_dict())
    out.append(("gated_deltanet", gdn, ours, ref))
    m2 = LayerSpec(d // 32, max(d // 512, 1), 64, widths=Mamba2Widths(64, 128, 4))  # Nemotron-H's: d_inner = 2 d
    ours2 = Mamba2Layer(d, m2).eval()
    ref2 = NemotronHMamba2Mixer(transformers.NemotronHConfig(
        hidden_size=d, mamba_num_heads=m2.n_heads, mamba_head_dim=64, n_groups=m2.n_kv_heads, ssm_state_size=128,
        layers_block_type=["mamba"]), 0).eval()
    ref2.load_state_dict(ours2.state_dict())
    out.append(("mamba2", m2, ours2, ref2))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=1024, help="d_model (default 1024)")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of repeats a measurement")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    device = torch.device("cpu")
    rows = []
    with torch.inference_mode():
        for name, spec, ours, ref in mixers(args.d):
            soft = AttentionLayer(AttentionConfig(d_model=args.d, n_heads=spec.n_heads, explicit_head_dim=spec.head_dim,
                                                  causal=True, seq_len=max(DECODE_T)), device=device).eval()
            for T in PREFILL_T:
                x = torch.randn(1, T, args.d)
                row = {"mixer": name, "phase": "prefill", "T": T,
                       "ours_ms": measure(lambda: ours(x), device, budget_s=args.budget).median_ms,  # noqa: B023
                       "transformers_ms": measure(lambda: ref(x), device, budget_s=args.budget).median_ms,  # noqa: B023
                       "sdpa_ms": measure(lambda: soft(x), device, budget_s=args.budget).median_ms}  # noqa: B023
                row["ours_vs_transformers"] = row["ours_ms"] / row["transformers_ms"]
                row["mixer_vs_sdpa"] = row["ours_ms"] / row["sdpa_ms"]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
            x_new = torch.randn(1, 1, args.d)
            state = ours.empty_state(1, device)
            for T in DECODE_T:
                k = torch.randn(1, spec.n_heads, T, spec.head_dim)
                v = torch.randn_like(k)  # (1, H, T, h): T - 1 cached tokens and the new one's slot
                row = {"mixer": name, "phase": "decode", "T": T,
                       "ours_ms": measure(lambda: ours.decode_step(x_new, *state), device,  # noqa: B023
                                          budget_s=args.budget).median_ms,
                       "sdpa_ms": measure(lambda: soft.decode_step(x_new, k, v), device,  # noqa: B023
                                          budget_s=args.budget).median_ms}
                row["mixer_vs_sdpa"] = row["ours_ms"] / row["sdpa_ms"]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    out = {"d_model": args.d, "threads": torch.get_num_threads(), "rows": rows}
    if args.json:
        print(json.dumps(out))
    else:
        for r in rows:
            extra = f", ours/transformers x{r['ours_vs_transformers']:.2f}" if "ours_vs_transformers" in r else ""
            print(f"{r['mixer']:15s} {r['phase']:7s} T {r['T']:>6}: {r['ours_ms']:9.2f} ms, "
                  f"vs SDPA x{r['mixer_vs_sdpa']:.2f}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
