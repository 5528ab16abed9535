"""The training speed settings reach the trainer and the model; on a CPU they change nothing."""

from __future__ import annotations

from pathlib import Path

import yaml

from trimbench.config import prepare as tb_config
from trimbench.models import load_sentence_model, use_attention
from trimbench.training import optimizer_name, training_arguments

REPO = Path(__file__).resolve().parent.parent


def default_train() -> dict:
    cfg = tb_config.prepare(yaml.safe_load((REPO / "config.yaml").read_text()), REPO)
    return cfg["experiments"]["sts-v1"]["train"]


def test_schema_defaults_and_cpu_arguments(tmp_path):
    train = default_train()
    assert {k: train[k] for k in ("attention", "tf32", "optimizer", "compile", "dataloader_workers")} == {
        "attention": "sdpa", "tf32": True, "optimizer": "auto", "compile": False, "dataloader_workers": 0}
    args = training_arguments(train, tmp_path)
    assert args.optim == "adamw_torch"  # CPU results stay those of torch's AdamW
    assert not args.tf32 and not args.torch_compile and not args.bf16
    args = training_arguments({**train, "precision": "bf16", "dataloader_workers": 2, "compile": True}, tmp_path)
    assert args.bf16 and args.dataloader_num_workers == 2 and args.dataloader_persistent_workers
    assert args.torch_compile


def test_auto_optimizer_is_fused_on_a_gpu_only():
    assert optimizer_name("auto", cuda=True) == "adamw_torch_fused"
    assert optimizer_name("auto", cuda=False) == "adamw_torch"
    assert optimizer_name("adamw_torch", cuda=True) == "adamw_torch"


def test_attention_implementation_is_set_on_the_model(tiny_bert_dir):
    model = load_sentence_model(tiny_bert_dir, device="cpu")
    use_attention(model, "eager")
    assert model[0].auto_model.config._attn_implementation == "eager"
    use_attention(model, "sdpa")
    assert model[0].auto_model.config._attn_implementation == "sdpa"


def test_tf32_is_available_from_ampere_on(monkeypatch):
    """Capability 8.0 (A100) is the first with TF32; 7.5 (T4) has none; no CUDA, none."""
    import torch

    from trimbench.training import tf32_available

    for available, capability, expected in ((True, (8, 0), True), (True, (9, 0), True), (True, (7, 5), False),
                                            (False, (8, 0), False)):
        monkeypatch.setattr(torch.cuda, "is_available", lambda available=available: available)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *_, capability=capability: capability)
        assert tf32_available() is expected, capability


def test_tf32_false_reaches_the_trainer_as_false_so_compile_cannot_turn_it_on(tmp_path, monkeypatch):
    """transformers turns TF32 on for a compiled fp32 run when its tf32 is None; False keeps it off
    (N11). True asks for it only where the GPU has it."""
    import trimbench.training as training
    from trimbench.training import tf32_argument

    for available in (True, False):
        monkeypatch.setattr(training, "tf32_available", lambda available=available: available)
        assert tf32_argument(False) is False
        assert tf32_argument(True) is (True if available else None)
    arguments = training_arguments({**default_train(), "tf32": False, "compile": True}, tmp_path)
    assert arguments.tf32 is False and arguments.torch_compile


#: presets whose originals trained in true fp32 (PyTorch's default matmuls: tf32 False; N3, N11); the
#: mixed-precision ones (2DMSE STS v1 fp16, SPLADE fp16) are not listed
TRUE_FP32_PRESETS = ["2dmse-sts-v2.yaml", "2dmse-retrieval.yaml", "2dmse-retrieval-ablations.yaml", "homedepot.yaml",
                     "electra.yaml"]


def test_fp32_presets_train_without_tf32(tmp_path, monkeypatch):
    """Every training stage of the fp32 presets (ELECTRA's domain adaptation and word-similarity
    pre-fine-tuning too) turns TF32 off, and off it reaches the trainer as tf32 False even on an
    Ampere GPU; an experiment that trains nothing (pretrained only) has no stage."""
    import trimbench.training as training

    for preset in TRUE_FP32_PRESETS:
        config = yaml.safe_load((REPO / "configs" / preset).read_text())
        for name, exp in config["experiments"].items():
            if exp.get("methods") == ["pretrained"]:
                continue
            sections = [exp["train"], *(exp[stage] for stage in ("domain_adaptation", "word_similarity")
                                        if exp.get(stage))]
            assert all(section.get("tf32") is False for section in sections), (preset, name)
    monkeypatch.setattr(training, "tf32_available", lambda: True)
    assert training_arguments({**default_train(), "tf32": False}, tmp_path).tf32 is False
