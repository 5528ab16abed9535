"""The 2DMSE retrieval ablation figures: experiments that differ from the plain 2DMSE one in one
group of switches (loss variants; target-dim sets; fixed vs paired doc), drawn as layer panels.

Groups are found from the configs, not declared: the baseline is the track's first experiment
with every loss and doc switch off; an experiment of the same model and grid joins a group when
it changes some of that group's switches and nothing else (a dims member may also set
sub_layer_full_dim, as the seed's "+DIMS ... + FULL-DIM"). Light (no pandas or matplotlib at
import): Snakemake parses with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

GROUPS = {
    "loss": ("score_align", "compare_to_last_layer", "sub_layer_full_dim"),
    "dims": ("target_dims",),
    "doc": ("passage_to_last_layer",),
}
#: switches a member of a group may change besides the group's own (the seed's target-dim figure
#: has "+DIMS 8,16,32,64,128,512 + FULL-DIM": a dim set with sub_layer_full_dim)
ALSO = {"dims": ("sub_layer_full_dim",)}
TITLES = {"loss": "2DMSE loss variants", "dims": "2DMSE target-dim sets", "doc": "2DMSE fixed-doc vs paired-doc"}
SWITCHES = tuple(key for keys in GROUPS.values() for key in keys)


def changed_switches(exp: dict, base: dict) -> set[str]:
    """The ablation switches ``exp`` sets otherwise than ``base``."""
    return {key for key in SWITCHES if exp["retrieval"][key] != base["retrieval"][key]}


def ablation_groups(experiments: dict[str, dict]) -> dict[str, list[str]]:
    """Group name -> [baseline, members...] for every group with a member (config order)."""
    candidates = {name: exp for name, exp in experiments.items()
                  if exp["track"] == "2dmse-retrieval" and "2dmse" in exp["methods"]}
    base = next((name for name, exp in candidates.items()
                 if not any(exp["retrieval"][key] for key in GROUPS["loss"] + GROUPS["doc"])), None)
    if base is None:
        return {}
    # Only experiments of the baseline's model and grid compare (a preset run beside the toy one).
    candidates = {name: exp for name, exp in candidates.items()
                  if (exp["model"], exp["grid"]) == (candidates[base]["model"], candidates[base]["grid"])}
    groups = {}
    for group, keys in GROUPS.items():
        allowed = set(keys) | set(ALSO.get(group, ()))
        members = [name for name, exp in candidates.items()
                   if name != base and changed_switches(exp, candidates[base]) & set(keys)
                   and changed_switches(exp, candidates[base]) <= allowed]
        if members:
            groups[group] = [base, *members]
    return groups


def label(exp: dict) -> str:
    r = exp["retrieval"]
    parts = []
    if r["score_align"]:
        parts.append("+align to (L, full)" if r["compare_to_last_layer"] else "+align")
    if r["sub_layer_full_dim"]:
        parts.append("+CE(l, full)")
    if r["passage_to_last_layer"]:
        parts.append("fixed-doc")
    parts.append("dims " + ",".join(map(str, sorted(r["target_dims"]))))
    return "2DMSE " + " ".join(parts)


def ablation_figure(scores: list[pd.DataFrame], configs: list[dict], dataset: str, metric: str, title: str,
                    paths: dict[str, str]) -> None:
    import pandas as pd  # here, not at the top: Snakemake imports this module while parsing

    from trimbench.plots.layers import layer_panels

    frames = []
    for table, config in zip(scores, configs, strict=True):
        cells = table[(table["variant"] == "2dmse") & (table["dataset"] == dataset) & (table["metric"] == metric)]
        frames.append(pd.DataFrame({"layer": cells["layer"].astype(int), "dim": cells["dim"].astype(int),
                                    "score": cells["value"], "method": label(config), "source": "ours"}))
    layer_panels(pd.concat(frames, ignore_index=True), metric, title, paths)
