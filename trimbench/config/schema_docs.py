"""The per-key configuration reference, generated from `schemas/config.schema.yaml`.

`python -m trimbench.config.schema_docs` prints it as markdown (`make docs` writes it to
`docs/configuration-reference.md`): every key path with its type, default, allowed values and the
schema's description. Definitions (`$defs`) are expanded where they are used, so each key appears
under the full path a config writes (`experiments.<name>.train.lr`); the experiments of each track
family get their own section, as the schema routes them on `track`.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from trimbench.config.schema import SCHEMA_PATH

#: the schema's routing of `experiments.<name>` on `track` (its if/then/else), as section titles
TRACK_SECTIONS = {
    "experiment": "tracks 2dmse-sts, 2dmse-retrieval, homedepot",
    "electra_experiment": "track electra",
    "splade_experiment": "track splade",
    "profile_experiment": "track profile",
}

#: marks a key its object requires (not a JSON Schema keyword: the generator's own)
REQUIRED = "trimbench:required"

#: JSON Schema keywords turned into the "allowed" column
BOUNDS = {"minimum": "≥ {}", "exclusiveMinimum": "> {}", "maximum": "≤ {}", "exclusiveMaximum": "< {}",
          "minItems": "≥ {} items", "maxItems": "≤ {} items", "minProperties": "≥ {} keys",
          "pattern": "matches `{}`"}


JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def load_schema(path: Path = SCHEMA_PATH) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def resolve(schema: dict, node: dict) -> dict:
    """``node`` with its ``$ref`` (to ``#/$defs/...``) merged under the node's own keywords: a use
    site's default and description win over the definition's."""
    if "$ref" not in node:
        return node
    name = node["$ref"].removeprefix("#/$defs/")
    return {**resolve(schema, schema["$defs"][name]), **{k: v for k, v in node.items() if k != "$ref"}}


def without_null(schema: dict, node: dict) -> tuple[dict, bool]:
    """A ``oneOf: [{type: null}, X]`` node as X (and whether null is allowed too)."""
    options = node.get("oneOf") or node.get("anyOf")
    if options and any(option.get("type") == "null" for option in options):
        (rest,) = [option for option in options if option.get("type") != "null"]
        merged = {**resolve(schema, rest), **{k: v for k, v in node.items() if k not in ("oneOf", "anyOf")}}
        return merged, True
    return node, False


def type_of(schema: dict, node: dict) -> str:
    node = resolve(schema, node)
    node, nullable = without_null(schema, node)
    if "const" in node:
        return "constant"
    if "anyOf" in node:
        return " or ".join(type_of(schema, option) for option in node["anyOf"])
    kinds = node.get("type")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if not kinds and "enum" in node:
        kinds = list(dict.fromkeys(JSON_TYPES[type(value)] for value in node["enum"]))
    if "array" in kinds and "items" in node:
        kinds[kinds.index("array")] = f"array of {type_of(schema, node['items'])}"
    if "object" in kinds and isinstance(node.get("additionalProperties"), dict) and not node.get("properties"):
        kinds[kinds.index("object")] = f"map to {type_of(schema, node['additionalProperties'])}"
    if nullable:
        kinds.append("null")
    return " or ".join(kinds) or "any"


def allowed_of(schema: dict, node: dict) -> str:
    node, _ = without_null(schema, resolve(schema, node))
    parts = []
    if "const" in node:
        parts.append(f"`{node['const']}`")
    if "enum" in node:
        parts.append(", ".join(f"`{value}`" for value in node["enum"]))
    for option in node.get("anyOf", []):
        parts.extend(bound.format(option[word]) for word, bound in BOUNDS.items() if word in option)
    parts.extend(bound.format(node[word]) for word, bound in BOUNDS.items() if word in node)
    if isinstance(node.get("items"), dict):
        items = resolve(schema, node["items"])
        if "enum" in items:
            parts.append("items: " + ", ".join(f"`{value}`" for value in items["enum"]))
        parts.extend("items " + bound.format(items[word]) for word, bound in BOUNDS.items()
                     if word in items and word.endswith("imum"))
    names = node.get("propertyNames", {})
    if "enum" in names:
        parts.append("keys: " + ", ".join(f"`{value}`" for value in names["enum"]))
    if node.get("uniqueItems"):
        parts.append("no repeats")
    return "; ".join(parts)


def cell(text: str) -> str:
    """Text fit for a markdown table cell: one line, pipes escaped, and outside code spans angle
    brackets too (the descriptions' `<id>` is not an HTML tag)."""
    spans = " ".join(str(text).split()).replace("|", "\\|").split("`")
    return "`".join(span if i % 2 else span.replace("<", "&lt;").replace(">", "&gt;") for i, span in enumerate(spans))


def default_of(node: dict) -> str:
    if "default" not in node:
        return ""
    return f"`{json.dumps(node['default'], ensure_ascii=False)}`"


def rows(schema: dict, node: dict, path: str) -> list[tuple[str, dict]]:
    """(key path, resolved node) of every key under ``node``, depth first, in the schema's order."""
    node, _ = without_null(schema, resolve(schema, node))
    found = []
    for name, child in node.get("properties", {}).items():
        child_path = f"{path}.{name}" if path else name
        found.append((child_path, {**child, REQUIRED: True} if name in node.get("required", ()) else child))
        found.extend(rows(schema, child, child_path))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and "if" not in extra:
        found.extend(rows(schema, extra, f"{path}.<name>"))
    items = node.get("items")
    if isinstance(items, dict):
        found.extend(rows(schema, items, f"{path}[]"))
    return found


def table(schema: dict, entries: list[tuple[str, dict]]) -> list[str]:
    lines = ["| key | type | default | allowed | description |", "|---|---|---|---|---|"]
    for path, node in entries:
        described = without_null(schema, resolve(schema, node))[0]
        description = node.get("description") or described.get("description", "")
        kind = type_of(schema, node) + (", required" if node.get(REQUIRED) else "")
        lines.append(f"| `{path}` | {cell(kind)} | {cell(default_of(node))} | "
                     f"{cell(allowed_of(schema, node))} | {cell(description)} |")
    return lines


def sections(schema: dict) -> list[tuple[str, list[str], list[tuple[str, dict]]]]:
    """(title, introduction, keys) of each section: the top level, datasets, models, and the
    experiments of each track family."""
    top = schema["properties"]
    found = [("Top level", [], [entry for name, node in top.items() if name not in ("datasets", "models", "experiments")
                                for entry in [(name, node), *rows(schema, node, name)]])]
    for name in ("datasets", "models"):
        found.append((f"`{name}`", [top[name].get("description", "")], rows(schema, top[name], name)))
    for definition, title in TRACK_SECTIONS.items():
        introduction = [top["experiments"].get("description", ""), schema["$defs"][definition].get("description", "")]
        found.append((f"`experiments` of {title}", introduction,
                      rows(schema, {"$ref": f"#/$defs/{definition}"}, "experiments.<name>")))
    return found


def reference(schema: dict) -> str:
    """The whole reference as markdown."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m trimbench.config.schema_docs` (`make docs`) from",
        "     schemas/config.schema.yaml; edit the schema's descriptions, not this file. -->",
        "",
        cell(schema["description"]),
        "",
        "Every key a config file may set, by its path: `<name>` stands for a name you choose (a dataset,",
        "model, experiment, run), `[]` for an item of a list. A default is filled in when the key is",
        "left out; a key without a default and not required is unset. How the keys are used:",
        "[configuration.md](configuration.md).",
    ]
    for title, introduction, entries in sections(schema):
        lines += ["", f"## {title}", ""]
        lines += [cell(text) for text in introduction if text]
        lines += [""] if any(introduction) else []
        lines += table(schema, entries)
    return "\n".join(lines) + "\n"


def undescribed(schema: dict) -> list[str]:
    """Key paths whose node (or the definition it refers to) has no description."""
    return [path for _, _, entries in sections(schema) for path, node in entries
            if not (node.get("description") or without_null(schema, resolve(schema, node))[0].get("description"))]


def main() -> None:
    print(reference(load_schema()), end="")


if __name__ == "__main__":
    main()
