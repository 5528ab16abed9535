# Input functions and parse-time tables of rules/export.smk.
def exported_models(name):
    """The standalone trimmed models of an experiment's export cells."""
    export = EXPERIMENTS[name].get("export") or {"cells": []}
    return [
        f"{experiment_dir(name)}/exported/{variant}/L{layer}_d{dim}"
        for variant in export["cells"] and export["variants"]
        for layer, dim in export["cells"]
    ]
