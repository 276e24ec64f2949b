"""What the Plan tab's roofline draws, as plain dicts for widgets/plan/charts.py: the chosen GPU's roof with
the plan's layer points (a global layer, and a local one when the model has both), and this machine's
measured roof with the app's own timing of the layer as points."""

from __future__ import annotations

from typing import Any

from core.plan.gpus import COMPUTE_DTYPE, GPU, THIS_MACHINE, find_gpu
from core.plan.report import roof_lines
from core.plan.roofline import layer_point
from sandbox.jobs.types import TimingOutcome

TIMING_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
# where each point's label sits, so that two points close together never print over each other
ANCHORS = {"prefill": (1, 1), "decode": (0, 1), "local prefill": (1, 0), "local decode": (0, 0),
           "timed prefill": (1, 0), "timed decode": (0, 0)}


def plan_points(j: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for points, local in ((j["roofline"], False), (j.get("roofline_local") or {}, True)):
        for ph, pt in points.items():
            kind = " (local)" if local else ""  # short labels: the note under the chart says every figure
            out.append({"label": f"{ph}{kind}", "intensity": pt["intensity"],
                        "flops_s": pt["bound_flops"], "symbol": ("d" if local else "s") if ph == "prefill" else
                        ("+" if local else "o"), "anchor": ANCHORS[f"local {ph}" if local else ph]})
    return out


def roofs(j: dict[str, Any], timing: TimingOutcome | None,
          machine: GPU | None) -> tuple[list[dict[str, Any]], str]:
    """(roofs, the note under the chart: every point's figures in words)."""
    g, inputs = j["gpu"], j["inputs"]
    chosen = {"name": f"{g['name']} ({j['roofline']['prefill']['peak_dtype']} roof)", "colour": "#56B4E9",
              "peak_flops": j["roofline"]["prefill"]["peak_flops"], "bandwidth": g["bandwidth_bytes_s"],
              "points": plan_points(j)}
    out = [chosen]
    note = (f"At {inputs['context']:,} tokens, batch {inputs['batch']:,}, the whole layer on one {g['name']} (not "
            "split by TP), each point at its bound, min(peak, intensity x bandwidth): " + "; ".join(roof_lines(j)) + ".")
    if timing is None:
        return out, note + " Time the layer (Heatmaps tab, Ctrl+M) to draw this machine's measured points."
    r = timing.result
    dtype = TIMING_DTYPE.get(r.dtype, "fp32")
    probe = machine or find_gpu("h100-sxm")  # intensity and FLOPs do not depend on the GPU
    on_chosen = g["id"] == THIS_MACHINE  # the chosen GPU is this machine: its points go on that roof
    here = {"name": f"this machine, measured ({r.device_name}, {dtype} roof)", "colour": "#F0E442", "dashed": True,
            "peak_flops": machine.peak_flops(COMPUTE_DTYPE[dtype])[0] if machine else None,
            "bandwidth": machine.bandwidth_bytes_s if machine else None, "points": []}
    said = []
    for phase, stats in (("prefill", r.prefill), ("decode", r.decode)):
        pt = layer_point(timing.config, probe, phase, dtype, dtype)
        m = pt.measured(stats.median_ms / 1e3)
        share = f", {m['fraction_of_bound']:.0%} of its roof" if machine else ""
        here["points"].append({"label": f"timed {phase}" + (f" {m['fraction_of_bound']:.0%}" if machine else ""),
                               "intensity": m["intensity"],
                               "flops_s": m["achieved_flops"], "symbol": "t", "anchor": ANCHORS[f"timed {phase}"]})
        said.append(f"{phase} {stats.median_ms:.4g} ms = {m['achieved_flops'] / 1e9:,.3g} GFLOP/s{share}")
    if machine is None:
        here.update(peak_flops=None, name="this machine's timing (press Measure this machine for its roof)")
    if on_chosen:
        chosen["points"] += here["points"]  # one roof, not the same one twice
    else:
        out.append(here)
    tc = timing.config
    note += f" Timed here ({r.device_name}, {r.dtype}, T={tc.seq_len:,}, B={tc.batch_size}): " + "; ".join(said) + "."
    return out, note
