"""A trimmed model as a standalone sentence-transformers folder: the first k layers, ``truncate_dim = d``.

The grid scores cell (k, d) from hidden state k of the full model, pooled by the model's own
modules and cut to d dims. The exported folder computes exactly that on its own: the transformer
physically keeps only its first k blocks (so it also runs faster) and its
``config_sentence_transformers.json`` carries ``truncate_dim``, which plain
``SentenceTransformer(path)`` reads back.

    python -m trimbench.export --model results/2dmse-sts/sts-v1/models/2dmse --layers 4 --dim 128 --out /tmp/L4_d128
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from trimbench.models import cut_layers, depth, load_sentence_model, read_shape

log = logging.getLogger(__name__)

#: written beside the model: where it came from, for the report reader and for re-exporting
PROVENANCE_FILE = "trimbench_export.json"


def check_cell(layers: int, dim: int, depth: int, width: int, where: str = "") -> None:
    """Raise ValueError unless 0 <= layers <= depth and 1 <= dim <= width."""
    prefix = f"{where}: " if where else ""
    if not 0 <= layers <= depth:
        raise ValueError(f"{prefix}cannot keep {layers} layers of a {depth}-layer model (0..{depth})")
    if not 1 <= dim <= width:
        raise ValueError(f"{prefix}cannot truncate a {width}-dim model to {dim} dims (1..{width})")


def save_trimmed(model, layers: int, dim: int, out_dir: str | Path, source: str | Path = "") -> Path:
    """Cut the loaded sentence-transformers ``model`` to ``layers`` blocks and save it with
    ``truncate_dim = dim`` to ``out_dir``."""
    out_dir, full_depth = Path(out_dir), depth(model)
    check_cell(layers, dim, full_depth, model.get_embedding_dimension(), str(source))
    cut_layers(model, layers)
    model.truncate_dim = dim
    model.save(str(out_dir), create_model_card=False)
    provenance = {"source": str(source), "source_layers": full_depth, "layers": layers, "dim": dim,
                  "max_seq_length": model.max_seq_length}
    (out_dir / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1, sort_keys=True))
    log.info("exported %s cut to %d of %d layers, truncate_dim %d, to %s", source, layers, full_depth, dim, out_dir)
    return out_dir


def export_trimmed(model_folder: str | Path, layers: int, dim: int, out_dir: str | Path,
                   pooling: str | None = None, max_seq_length: int | None = None) -> Path:
    """Load the model of ``model_folder`` (``pooling`` replacing its own when given) and
    :func:`save_trimmed` it."""
    model_folder = Path(model_folder)
    shape = read_shape(model_folder)  # before loading: a wrong cell fails fast
    check_cell(layers, dim, shape.layers, shape.dim, str(model_folder))
    model = load_sentence_model(model_folder, pooling=pooling, max_seq_length=max_seq_length, device="cpu")
    return save_trimmed(model, layers, dim, out_dir, model_folder)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m trimbench.export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a sentence-transformers or transformers model folder")
    parser.add_argument("--layers", type=int, required=True, help="k: transformer blocks kept")
    parser.add_argument("--dim", type=int, required=True, help="d: the embedding's truncate_dim")
    parser.add_argument("--out", required=True, help="the folder to write")
    parser.add_argument("--pooling", choices=["mean", "cls"], default=None, help="default: the model's own")
    parser.add_argument("--max-seq-length", type=int, default=None, help="default: the model's own")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        export_trimmed(args.model, args.layers, args.dim, args.out, args.pooling, args.max_seq_length)
    except (ValueError, FileNotFoundError) as error:
        parser.exit(2, f"error: {error}\n")


if __name__ == "__main__":
    main()
