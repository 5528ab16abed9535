"""Training of the ELECTRA track (truncated encoders): fine-tuning a cut model on a pair task, scoring it, and
the optional stages before it (MLM domain adaptation, word-similarity pre-fine-tuning).

The objectives and evaluators are sentence-transformers' (``CosineSimilarityLoss``,
``SoftmaxLoss``, ``EmbeddingSimilarityEvaluator``, ``BinaryClassificationEvaluator``); the MLM
stage is the transformers ``Trainer`` with its masking collator.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.evaluation import (
    BinaryClassificationEvaluator,
    EmbeddingSimilarityEvaluator,
    SentenceEvaluator,
)
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss, SoftmaxLoss
from transformers import TrainerCallback, set_seed

from trimbench.data.columns import KIND_COLUMNS
from trimbench.data.tables import sts_texts
from trimbench.electra.checks import LAST_EPOCH_SPLIT, MAIN_METRIC, PARAMETERS
from trimbench.jobs import faults
from trimbench.jobs.atomic import atomic_path
from trimbench.jobs.fingerprint import stamped_work_dir
from trimbench.models import _transformer_folder, cut_layers, encoder_layers
from trimbench.training import (
    check_finite_loss,
    checkpoint_callback,
    finite_loss_callback,
    resumable_checkpoint,
    training_rows,
)
from trimbench.training import training_arguments as shared_training_arguments

log = logging.getLogger(__name__)

#: the name our evaluators give the dev split, so the trainer logs ``eval_dev_<metric>``
DEV = "dev"
#: the key each objective's dev evaluator reports its main metric under
EVALUATOR_METRIC = {"cosine_mse": "spearman_cosine", "cosine_bce": "cosine_f1", "softmax": "macro_f1"}


def parameters_used(st_model) -> int:
    """The Pareto figures' parameter count, as the paper's (``count_params`` in
    notebooks/latex_table_rows.ipynb): the embedding module and the kept blocks, plus any modules
    after the transformer. Not counted: ELECTRA's ``embeddings_project`` (narrow embeddings projected
    up: +0.20 M for the base generator), DeBERTa's relative-position embeddings, BERT's pooler."""
    transformer = st_model[0].auto_model
    counted = [*transformer.embeddings.parameters(), *encoder_layers(transformer).parameters()]
    after = [p for module in list(st_model)[1:] for p in module.parameters()]
    return sum(p.numel() for p in counted + after)


def build_loss(model, objective: str, num_labels: int):
    if objective == "cosine_mse":
        return CosineSimilarityLoss(model)
    if objective == "cosine_bce":
        # The paper's MRPC objective: the cosine itself is the logit of "paraphrase".
        return CosineSimilarityLoss(model, loss_fct=torch.nn.BCEWithLogitsLoss())
    return SoftmaxLoss(model, model.get_embedding_dimension(), num_labels)


def pair_embeddings(model, frame: pd.DataFrame, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of each pair's two texts, every unique text encoded once."""
    texts, first, second = sts_texts(frame)
    embeddings = model.encode(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)
    return embeddings[first], embeddings[second]


def cosines(frame: pd.DataFrame, model, batch_size: int) -> np.ndarray:
    left, right = pair_embeddings(model, frame, batch_size)
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    # a zero vector's dot product is 0: divided by inf its cosine is 0 (not 0/0)
    return (left * right).sum(axis=1) / np.where(norms > 0, norms, np.inf)


def f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The cosine threshold with the best F1 on these pairs (sentence-transformers' search)."""
    return float(BinaryClassificationEvaluator.find_best_f1_and_threshold(scores, labels, True)[3])


def threshold_scores(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """F1 of the positive class and accuracy of predicting "paraphrase" where cosine > threshold
    (strictly, as the paper's ``evaluators.py:164-169``)."""
    predicted = scores > threshold
    labels = labels.astype(bool)
    true_positive = float((predicted & labels).sum())
    denominator = predicted.sum() + labels.sum()
    return {"f1": 2 * true_positive / denominator if denominator else 0.0,
            "accuracy": float((predicted == labels).mean())}


def class_scores(predicted: np.ndarray, labels: np.ndarray, num_labels: int) -> dict[str, float]:
    """Macro-F1 over ``num_labels`` classes (a class never predicted nor present counts 0) and accuracy."""
    f1s = []
    for label in range(num_labels):
        true_positive = float(((predicted == label) & (labels == label)).sum())
        denominator = float((predicted == label).sum() + (labels == label).sum())
        f1s.append(2 * true_positive / denominator if denominator else 0.0)
    return {"macro_f1": float(np.mean(f1s)), "accuracy": float((predicted == labels).mean())}


def classify(loss: SoftmaxLoss, frame: pd.DataFrame, batch_size: int) -> np.ndarray:
    """The softmax classifier's label for each pair, on [u; v; |u - v|] as in training."""
    left, right = pair_embeddings(loss.model, frame, batch_size)
    u, v = torch.from_numpy(left), torch.from_numpy(right)
    features = torch.cat([u, v, (u - v).abs()], dim=1).to(loss.classifier.weight)
    with torch.inference_mode():
        return loss.classifier(features).argmax(dim=1).cpu().numpy()


class PairClassifierEvaluator(SentenceEvaluator):
    """Macro-F1 and accuracy of a ``SoftmaxLoss`` classifier on labelled pairs.

    sentence-transformers' ``LabelAccuracyEvaluator`` reports accuracy only (SICK's metric is
    macro-F1) and needs the old DataLoader API; this is the same idea on a data frame.
    """

    def __init__(self, loss: SoftmaxLoss, frame: pd.DataFrame, name: str, batch_size: int):
        super().__init__()
        self.loss, self.frame, self.name, self.batch_size = loss, frame, name, batch_size
        self.primary_metric = "macro_f1"

    def __call__(self, model, output_path=None, epoch: int = -1, steps: int = -1) -> dict[str, float]:
        labels = self.frame["label"].to_numpy()
        metrics = class_scores(classify(self.loss, self.frame, self.batch_size), labels, self.loss.num_labels)
        metrics = self.prefix_name_to_metrics(metrics, self.name)
        self.store_metrics_in_model_card_data(model, metrics, epoch, steps)
        return metrics


def dev_evaluator(objective: str, loss, frame: pd.DataFrame, batch_size: int):
    if objective == "cosine_mse":
        return EmbeddingSimilarityEvaluator(frame["sentence1"].tolist(), frame["sentence2"].tolist(),
                                            frame["score"].tolist(), batch_size=batch_size, name=DEV,
                                            main_similarity="cosine", similarity_fn_names=["cosine"],
                                            write_csv=False)
    if objective == "cosine_bce":
        return BinaryClassificationEvaluator(frame["sentence1"].tolist(), frame["sentence2"].tolist(),
                                             frame["label"].tolist(), batch_size=batch_size, name=DEV,
                                             similarity_fn_names=["cosine"], write_csv=False)
    return PairClassifierEvaluator(loss, frame, DEV, batch_size)


class BestEpoch(TrainerCallback):
    """Keeps, in memory, the weights of the epoch with the best dev metric and restores them when
    training ends (``select='best'``); records every epoch's dev metric either way.

    The trainer's ``load_best_model_at_end`` restores the model from a checkpoint but not a loss's
    own weights (SoftmaxLoss's classifier, which scores SICK), and writes a checkpoint every
    epoch; keeping the loss's state dict (the model's included) covers both, as the paper's code
    kept a copy of its best model.
    """

    def __init__(self, loss: torch.nn.Module, key: str, select: str):
        self.loss, self.key, self.select = loss, key, select
        self.history: list[dict] = []
        self.best_value: float | None = None
        self.best_epoch: int | None = None
        self._state: dict | None = None
        #: the last epoch's weights when another epoch's were restored (else the model is the last's)
        self.last_state: dict | None = None

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        value = float(metrics[self.key])
        epoch = int(round(state.epoch or 0))
        self.history.append({"epoch": epoch, "step": state.global_step, self.key: value})
        if self.select == "best" and (self.best_value is None or value > self.best_value):
            self.best_value, self.best_epoch = value, epoch
            self._state = {name: tensor.detach().to("cpu", copy=True)
                           for name, tensor in self.loss.state_dict().items()}

    def on_train_end(self, args, state, control, **kwargs):
        if self._state is not None and self.best_epoch != (self.history[-1]["epoch"] if self.history else None):
            # the last epoch's weights, for its own score: the archive's protocol (N4)
            self.last_state = {name: tensor.detach().to("cpu", copy=True)
                               for name, tensor in self.loss.state_dict().items()}
        if self._state is not None:
            self.loss.load_state_dict(self._state)
        if self.select == "last" and self.history:
            self.best_epoch = self.history[-1]["epoch"]


def training_arguments(settings: dict, seed: int, output_dir: Path) -> SentenceTransformerTrainingArguments:
    """The paper's optimisation: AdamW (weight decay off for biases and LayerNorm, as the trainer
    does), linear schedule with ``warmup_ratio`` warm-up, gradient clipping; dev eval each epoch."""
    # checkpoint_steps 0: a fine-tuning is minutes long and saves no model (the shared arguments need the key).
    train = {**settings, "seed": seed, "max_steps": -1, "gradient_accumulation": 1, "gradient_checkpointing": False,
             "batch_sampler": "batch_sampler", "checkpoint_steps": 0,
             "warmup_steps": settings["warmup_ratio"]}  # below 1: a fraction of all steps (transformers 5)
    return shared_training_arguments(train, output_dir, max_grad_norm=settings["max_grad_norm"],
                                     lr_scheduler_type="linear", eval_strategy="epoch")


def fine_tune_pairs(model, objective: str, num_labels: int, train_frame: pd.DataFrame, dev_frame: pd.DataFrame,
                    settings: dict, seed: int, eval_batch_size: int):
    """Fine-tune ``model`` in place on labelled pairs; return the loss (SICK's classifier lives in
    it), the history (each epoch's dev metric and the epoch kept) and the last epoch's weights of
    the loss when another epoch's were kept (else None: the model is the last epoch's)."""
    import datasets

    set_seed(seed)  # before the loss: SoftmaxLoss draws its classifier's initial weights
    loss = build_loss(model, objective, num_labels)
    evaluator = dev_evaluator(objective, loss, dev_frame, eval_batch_size)
    best = BestEpoch(loss, f"eval_{DEV}_{EVALUATOR_METRIC[objective]}", settings["select"])
    with tempfile.TemporaryDirectory(prefix="trimbench-trainer-") as work_dir:
        trainer = SentenceTransformerTrainer(
            model=model,
            args=training_arguments(settings, seed, Path(work_dir)),
            train_dataset=datasets.Dataset.from_pandas(train_frame, preserve_index=False),
            loss=loss,
            evaluator=evaluator,
            callbacks=[best, finite_loss_callback(what := f"the {objective} fine-tuning of seed {seed}")],
        )
        result = trainer.train()
    check_finite_loss(result.metrics.get("train_loss"), what, 1, result.global_step)
    log.info("training finished: %s; epoch kept: %s (%s)", result.metrics, best.best_epoch, settings["select"])
    history = {"epochs": best.history, "kept_epoch": best.best_epoch, "select": settings["select"],
               "train_rows": len(train_frame), "train_metrics": result.metrics}
    return loss, history, best.last_state


def score_splits(objective: str, loss, frames: dict[str, pd.DataFrame], batch_size: int) -> list[dict]:
    """Rows (split, metric, value) on each split; for the binary objective the F1 threshold is
    the one that is best on ``validation``, applied to every split (the paper's protocol)."""
    rows = []
    model = loss.model
    threshold = None
    if objective == "cosine_bce":
        dev = frames["validation"]
        threshold = f1_threshold(cosines(dev, model, batch_size), dev["label"].to_numpy())
        log.info("F1 threshold chosen on validation: %.4f", threshold)
    for split, frame in frames.items():
        if objective == "cosine_mse":
            evaluator = EmbeddingSimilarityEvaluator(frame["sentence1"].tolist(), frame["sentence2"].tolist(),
                                                     frame["score"].tolist(), batch_size=batch_size,
                                                     main_similarity="cosine", similarity_fn_names=["cosine"],
                                                     write_csv=False)
            metrics = evaluator(model)
        elif objective == "cosine_bce":
            metrics = threshold_scores(cosines(frame, model, batch_size), frame["label"].to_numpy(), threshold)
        else:
            metrics = class_scores(classify(loss, frame, batch_size), frame["label"].to_numpy(), loss.num_labels)
        for metric, value in metrics.items():
            rows.append({"split": split, "metric": metric, "value": float(value)})
    return rows


def last_epoch_rows(objective: str, loss, last_state: dict | None, kept_rows: list[dict],
                    frames: dict[str, pd.DataFrame], batch_size: int) -> list[dict]:
    """The test rows of the last epoch's model (split :data:`LAST_EPOCH_SPLIT`): the kept model's
    when it is the last epoch's, else scored after loading the last epoch's weights (left loaded).
    The archived results the ELECTRA reference mostly holds score the last epoch
    (``training_stsbenchmark_hf.py@4b995f6:101,142``); the final table the dev-chosen one."""
    if last_state is None:
        rows = kept_rows
    else:
        loss.load_state_dict(last_state)
        rows = score_splits(objective, loss, frames, batch_size)
    return [{**row, "split": LAST_EPOCH_SPLIT} for row in rows if row["split"] == "test"]


def fine_tune_cut(model, k: int, objective: str, num_labels: int, kind: str, tables: dict[str, pd.DataFrame],
                  settings: dict, seed: int, eval_batch_size: int) -> tuple[list[dict], dict]:
    """Cut ``model`` to ``k`` layers, fine-tune it on the task's train split with dev selection,
    score validation and test. Returns score rows (split, metric, value; the parameter count as
    a row without split) and the history."""
    cut_layers(model, k)
    count = parameters_used(model)
    log.info("cut to %d layers: %d parameters used", k, count)
    train = training_rows(tables["train"], kind, settings["max_samples"], seed)
    columns = list(KIND_COLUMNS[kind])
    dev, test = tables["validation"][columns], tables["test"][columns]
    log.info("objective %s: %d train, %d validation, %d test pairs", objective, len(train), len(dev), len(test))
    loss, history, last_state = fine_tune_pairs(model, objective, num_labels, train, dev, settings, seed,
                                                eval_batch_size)
    rows = score_splits(objective, loss, {"validation": dev, "test": test}, eval_batch_size)
    rows += last_epoch_rows(objective, loss, last_state, rows, {"validation": dev, "test": test}, eval_batch_size)
    main = MAIN_METRIC[objective]
    log.info("%s: %s", main, {r["split"]: round(r["value"], 4) for r in rows if r["metric"] == main})
    history["parameters"] = count
    return rows + [{"split": None, "metric": PARAMETERS, "value": float(count)}], history


def reinitialise(st_model, seed: int):
    """The paper's ``--random_init`` (``hf_model.py:34-36``): every encoder weight drawn anew from
    the model's config, by the fine-tuning's seed (``training.py:84-88`` seeds torch before building the
    model); the tokenizer stays the pretrained one. Drawn at full depth, before any cut."""
    from transformers import AutoModel

    transformer = st_model[0].auto_model
    torch.manual_seed(seed)
    transformer.load_state_dict(AutoModel.from_config(transformer.config).state_dict())
    return st_model


def fine_tune_cuts(load_model: Callable[[int, int], object], fine_tunings: list[tuple[int, int]], objective: str,
                   num_labels: int, kind: str, tables: dict[str, pd.DataFrame], settings: dict, eval_batch_size: int,
                   work_dir: Path, fingerprint: str) -> list[tuple[int, int, list[dict], dict]]:
    """Every (k, seed) fine-tuning of one job, in order: (k, seed, score rows, history) each.

    ``load_model(k, seed)`` gives the fine-tuning's start model, a copy of its own (``fine_tune_cut``
    cuts it in place). Each finished fine-tuning is kept in ``work_dir`` at once, so a job cut short
    (preempted, out of time) resumes after its last finished one; ``fingerprint`` discards what other
    settings left.
    """
    stamped_work_dir(work_dir, fingerprint)
    finished = []
    for k, seed in fine_tunings:
        part = work_dir / f"L{k}-seed{seed}.json"
        if part.is_file():
            log.info("k=%d seed %d: finished by an earlier attempt, kept", k, seed)
            result = json.loads(part.read_text())
        else:
            log.info("k=%d seed %d: fine-tuning %d of %d", k, seed, len(finished) + 1, len(fine_tunings))
            rows, history = fine_tune_cut(load_model(k, seed), k, objective, num_labels, kind, tables, settings, seed,
                                     eval_batch_size)
            result = {"rows": rows, "history": history}
            with atomic_path(part) as tmp:
                Path(tmp).write_text(json.dumps(result))
            faults.hold("fine_tuning")
        finished.append((k, seed, result["rows"], result["history"]))
    return finished


# --- optional stages ---------------------------------------------------------------------------


def unique_texts(frame: pd.DataFrame, kind: str, max_samples: int | None, seed: int) -> list[str]:
    """The distinct texts of a table's text columns (the paper: every NLI sentence once)."""
    columns = [c for c in KIND_COLUMNS[kind] if c not in ("score", "label")]
    texts = pd.unique(pd.concat([frame[c] for c in columns], ignore_index=True).dropna().astype(str))
    texts = pd.Series(texts)
    if max_samples is not None and len(texts) > max_samples:
        texts = texts.sample(n=max_samples, random_state=seed)
    return texts.tolist()


def seed_head(mlm) -> list[str]:
    """Make the fresh masked-LM head of ``mlm`` the paper's: initialised as its ``dapt.py`` builds
    it and held fixed while the encoder adapts. Returns the names of the frozen parameters.

    ``dapt.py:37-44`` builds the head as plain modules — ``BertLMPredictionHead(config)`` (decoder
    bias zeros), for the ELECTRA generator ``ElectraGeneratorPredictions`` + ``nn.Linear`` (bias
    torch's uniform) — so torch's default initialisation, not the model's ``_init_weights``; its
    decoder weight *is* the word embeddings. ``dapt.py:89-90`` builds the optimiser from the
    encoder alone: the head's transform, LayerNorm and bias never move; the tied decoder weight
    moves with the embeddings. ``AutoModelForMaskedLM`` gives the same layout for BERT, both
    ELECTRAs and DeBERTa-v2/v3 (its legacy head); the paper told the generator by its name, we by
    its embeddings being wider than its blocks (electra-base-generator: 768 and 256).
    """
    output = mlm.get_output_embeddings()
    tied = output.weight
    if tied is not mlm.get_input_embeddings().weight:
        raise RuntimeError(f"{type(mlm).__name__}: the MLM decoder is not tied to the word embeddings")
    encoder = {id(p) for p in mlm.base_model.parameters()}
    config = mlm.config
    generator_head = config.model_type == "electra" and config.embedding_size != config.hidden_size
    with torch.no_grad():
        for module in mlm.modules():
            if module is output:
                if output.bias is not None:
                    if generator_head:  # nn.Linear.reset_parameters' bias, without touching the tied weight
                        bound = 1 / output.in_features ** 0.5
                        output.bias.uniform_(-bound, bound)
                    else:
                        output.bias.zero_()
            elif isinstance(module, (torch.nn.Linear, torch.nn.LayerNorm)) and not any(
                    id(p) in encoder for p in module.parameters()):
                module.reset_parameters()
    frozen = []
    for name, parameter in mlm.named_parameters():
        if id(parameter) not in encoder:
            parameter.requires_grad_(False)
            frozen.append(name)
    return frozen


def batch_counted_schedule(trainer_class, total_batches: int, warmup_batches: int):
    """``trainer_class`` with the paper's DAPT schedule: ``dapt.py:91-95`` sizes the linear
    schedule in batches (epochs × batches per epoch, 10 % of them warm-up) but steps it once per
    optimizer step (every ``gradient_accumulation`` batches, ``dapt.py:141-143``). With 8 batches a
    step the warm-up spans 80 % of the steps and the rate ends at 97 % of its peak; with DeBERTa's
    32 (``scripts/run_dapt.sh``) the warm-up never ends and the rate peaks at 31 %."""
    from transformers import get_linear_schedule_with_warmup

    class BatchCountedSchedule(trainer_class):
        def create_scheduler(self, num_training_steps, optimizer=None):
            if self.lr_scheduler is None:
                self.lr_scheduler = get_linear_schedule_with_warmup(optimizer or self.optimizer, warmup_batches,
                                                                    total_batches)
                self._created_lr_scheduler = True
            return self.lr_scheduler

    return BatchCountedSchedule


def masked_lm_trainer(model_dir: Path, texts: list[str], stage: dict, trainer_dir: Path):
    """The trainer of :func:`adapt_domain` (its model is the masked-LM model, its
    ``processing_class`` the tokenizer): a fresh head on the encoder of ``model_dir`` (frozen as
    the paper's unless ``stage["head"]`` is ``trained``), ``texts`` tokenised, the schedule."""
    import datasets
    from transformers import (
        AutoModel,
        AutoModelForMaskedLM,
        AutoTokenizer,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainingArguments,
    )

    folder = str(_transformer_folder(Path(model_dir)))
    set_seed(stage["seed"])
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    encoder = AutoModel.from_pretrained(folder, local_files_only=True)
    mlm = AutoModelForMaskedLM.from_config(encoder.config)
    if stage["head"] == "frozen":
        log.info("fresh MLM head held at its initialisation: %s", seed_head(mlm))
    missing, unexpected = mlm.base_model.load_state_dict(encoder.state_dict(), strict=False)
    if missing:
        raise RuntimeError(f"the masked-LM model of '{model_dir}' lacks encoder weights {missing}")
    log.info("fresh MLM head; encoder weights it does not use: %s", unexpected)
    # max_seq_length null: the tokenizer's own maximum, as dapt.py's truncation=True
    encoded = datasets.Dataset.from_dict({"text": texts}).map(
        lambda batch: tokenizer(batch["text"], truncation=True, max_length=stage["max_seq_length"]),
        batched=True, remove_columns=["text"])
    # The shared mapping of a config section to the trainer's arguments (checkpoints, precision,
    # the GPU speed settings), with plain transformers' arguments: the MLM model is no sentence model.
    train = {**stage, "max_steps": -1, "gradient_checkpointing": False,
             "warmup_steps": stage["warmup_ratio"]}  # below 1: a fraction of all steps (transformers 5)
    args = shared_training_arguments(train, Path(trainer_dir), TrainingArguments, lr_scheduler_type="linear")
    trainer_class = Trainer
    if stage["schedule"] == "batches":
        total_batches = int(stage["epochs"] * math.ceil(len(texts) / stage["batch_size"]))
        trainer_class = batch_counted_schedule(Trainer, total_batches, int(stage["warmup_ratio"] * total_batches))
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=stage["mlm_probability"])
    return trainer_class(model=mlm, args=args, train_dataset=encoded, data_collator=collator,
                         processing_class=tokenizer, callbacks=[checkpoint_callback()])


def adapt_domain(model_dir: Path, texts: list[str], stage: dict, out_dir: Path, work_dir: Path,
                 fingerprint: str) -> dict:
    """MLM on ``texts`` with a fresh masked-LM head on the model's last layer; saves the adapted
    encoder (no head) with its tokenizer to ``out_dir``. Each cut is then taken from it.

    As in the paper's code (``dapt.py``, run once per model at its default last layer), the head
    is new for every model, its decoder tied to the word embeddings, and only the encoder learns
    (:func:`seed_head`; ``stage["head"]``: ``trained`` trains it too); ELECTRA discriminators have
    no MLM head to start from. Masking: 15 % of tokens, 80/10/10 (``DataCollatorForLanguageModeling``).
    ``stage["schedule"]``: ``batches`` = the paper's (:func:`batch_counted_schedule`), ``steps`` =
    the trainer's (warm-up and decay counted in optimizer steps).
    The longest stage of the track (~125k steps in the paper): checkpoints every
    ``stage["checkpoint_steps"]`` in ``work_dir``, resumed as :func:`trimbench.training.fine_tune` does.
    """
    checkpoint = resumable_checkpoint(Path(work_dir), fingerprint, model_file="config.json")
    trainer = masked_lm_trainer(model_dir, texts, stage, Path(work_dir) / "trainer")
    if checkpoint is not None:
        # The schedule, optimizer and data order continue; the masks drawn after the checkpoint
        # differ from an uninterrupted run's (transformers restores the RNG only after collating
        # the first resumed batch), so a resumed adaptation is equivalent, not bit-identical.
        log.info("resuming from checkpoint %s", checkpoint)
    result = trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint is not None else None)
    log.info("MLM finished on %d texts: %s", len(texts), result.metrics)
    trainer.model.base_model.save_pretrained(str(out_dir))
    trainer.processing_class.save_pretrained(str(out_dir))
    shutil.rmtree(work_dir, ignore_errors=True)
    return result.metrics
