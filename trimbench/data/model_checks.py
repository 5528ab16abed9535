"""Hub model entries against their contracts (reference/hub): the declared depth and width, whether the
checkpoint carries an MLM head.
"""

from __future__ import annotations

from trimbench.data.contracts import Contract, Mismatch, load


def model_fact(contract: Contract, *names: str):
    config = contract.raw["config"]
    return next((config[name] for name in names if config.get(name) is not None), None)


def check_model(name: str, entry: dict) -> None:
    """Raise :class:`Mismatch` where a hub model entry's declared depth or width contradicts its contract."""
    if entry.get("source") != "hub":
        return
    contract = load(entry["id"])
    if contract is None or not contract.describes(entry.get("revision")):
        return
    # DistilBERT's n_layers and dim too: contracts record every model under the common names
    for key, names in (("layers", ("num_hidden_layers",)), ("dim", ("hidden_size",))):
        real = model_fact(contract, *names)
        if real is not None and entry.get(key) is not None and entry[key] != real:
            raise Mismatch(f"models.{name}.{key}", f"declares {key}={entry[key]}, but {contract.label()} has "
                                                   f"{names[0]}={real} in its config.json")


def has_mlm_head(entry: dict) -> bool | None:
    """Whether a hub model's checkpoint carries MLM head weights, per its contract (None: unknown)."""
    contract = load(entry["id"]) if entry.get("source") == "hub" else None
    if contract is None or not contract.describes(entry.get("revision")):
        return None
    return contract.raw["mlm_head"]
