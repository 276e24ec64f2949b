"""The recurrent mixers beside softmax attention of the same width, and beside transformers' own torch path of the same
mixer with the same weights, in one process.

Each mixer (Gated DeltaNet, Mamba-2, KDA, lightning attention, Mamba-1) at a CPU-sized width (--d, default 1024;
heads as below): its prefill of T tokens (T = 1k, 4k, 16k) in our form and in transformers' module
(Qwen3NextGatedDeltaNet, NemotronHMamba2Mixer, KimiLinearDeltaAttention, MiniMaxLightningAttention, JambaMambaMixer:
their torch fallbacks on a CPU), and one decode step with T = 1k and 32k tokens behind it (the mixer's step is
constant in T; the softmax layer reads T cached keys). The softmax layer is MHA of the mixer's baseline heads and
width (SDPA, causal). Ratios: ours / transformers (prefill) and mixer / SDPA (prefill and decode). A mixer's longer
prefills are skipped once one of its measurements took more than --max-s (Mamba-1's scan runs token by token).
--only names the mixers to run. --json prints the rows.
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
from core.kinds.kda.layer import KDALayer  # noqa: E402
from core.kinds.kda.spec import KDAWidths  # noqa: E402
from core.kinds.lightning.layer import LightningLayer  # noqa: E402
from core.kinds.lightning.spec import LightningWidths  # noqa: E402
from core.kinds.mamba1.layer import Mamba1Layer  # noqa: E402
from core.kinds.mamba1.spec import Mamba1Widths  # noqa: E402
from core.kinds.mamba2.layer import Mamba2Layer  # noqa: E402
from core.kinds.mamba2.spec import Mamba2Widths  # noqa: E402
from core.kinds.registry import kind_of  # noqa: E402
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
    from transformers.models.jamba.modeling_jamba import JambaMambaMixer
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearDeltaAttention
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    kda = LayerSpec(heads, heads, 128, widths=KDAWidths(128, 4))
    ours3 = KDALayer(d, kda).eval()
    ref3 = KimiLinearDeltaAttention(transformers.KimiLinearConfig(
        hidden_size=d, linear_num_heads=heads, linear_head_dim=128, num_hidden_layers=1,
        layer_types=["linear_attention"]), 0).eval()
    ref3.load_state_dict(ours3.state_dict())
    out.append(("kda", kda, ours3, ref3))
    light = LayerSpec(heads, heads, 128, widths=LightningWidths(128))
    ours4 = LightningLayer(d, light).eval()
    ref4 = MiniMaxLightningAttention(transformers.MiniMaxConfig(
        hidden_size=d, num_attention_heads=heads, head_dim=128, num_hidden_layers=2,
        layer_types=["linear_attention", "full_attention"]), 0).eval()
    ref4.load_state_dict(ours4.state_dict(), strict=False)
    out.append(("lightning", light, ours4, lambda x: ref4(x, None, None)[0]))
    m1 = LayerSpec(1, 1, 2 * d, widths=Mamba1Widths(2 * d, 16, max(d // 16, 1), 4))
    ours5 = Mamba1Layer(d, m1).eval()
    ref5 = JambaMambaMixer(transformers.JambaConfig(hidden_size=d, mamba_d_state=16, mamba_expand=2,
                                                     mamba_dt_rank=max(d // 16, 1), num_hidden_layers=1), 0).eval()
    ref5.load_state_dict(ours5.transformers_state_dict())
    out.append(("mamba1", m1, ours5, ref5))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=1024, help="d_model (default 1024)")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of repeats a measurement")
    ap.add_argument("--max-s", type=float, default=30.0, help="skip a mixer's longer prefills past this (seconds)")
    ap.add_argument("--only", default="", help="comma-separated mixers to run (default: all)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    only = {m for m in args.only.split(",") if m}
    logging.getLogger("transformers").setLevel(logging.ERROR)
    device = torch.device("cpu")
    rows = []
    with torch.inference_mode():
        for name, spec, ours, ref in mixers(args.d):
            if only and name not in only:
                continue
            base = kind_of(spec).baseline(spec)
            soft = AttentionLayer(AttentionConfig(d_model=args.d, n_heads=base.n_heads, explicit_head_dim=base.head_dim,
                                                  causal=True, seq_len=max(DECODE_T)), device=device).eval()
            slow = False
            for T in PREFILL_T:
                if slow:
                    rows.append({"mixer": name, "phase": "prefill", "T": T, "skipped": f"over {args.max_s:g} s"})
                    continue
                x = torch.randn(1, T, args.d)
                row = {"mixer": name, "phase": "prefill", "T": T,
                       "ours_ms": measure(lambda: ours(x), device, budget_s=args.budget).median_ms,  # noqa: B023
                       "transformers_ms": measure(lambda: ref(x), device, budget_s=args.budget).median_ms,  # noqa: B023
                       "sdpa_ms": measure(lambda: soft(x), device, budget_s=args.budget).median_ms}  # noqa: B023
                row["ours_vs_transformers"] = row["ours_ms"] / row["transformers_ms"]
                row["mixer_vs_sdpa"] = row["ours_ms"] / row["sdpa_ms"]
                rows.append(row)
                slow = max(row["ours_ms"], row["transformers_ms"]) * 7 / 1000 > args.max_s  # 7 calls a measurement
                print(json.dumps(row), file=sys.stderr)
            x_new = torch.randn(1, 1, args.d)
            state = ours.empty_state(1, device)
            for T in DECODE_T:
                k = torch.randn(1, base.n_heads, T, base.head_dim)
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
            if "skipped" in r:
                print(f"{r['mixer']:15s} {r['phase']:7s} T {r['T']:>6}: skipped ({r['skipped']})")
                continue
            extra = f", ours/transformers x{r['ours_vs_transformers']:.2f}" if "ours_vs_transformers" in r else ""
            print(f"{r['mixer']:15s} {r['phase']:7s} T {r['T']:>6}: {r['ours_ms']:9.2f} ms, "
                  f"vs SDPA x{r['mixer_vs_sdpa']:.2f}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
