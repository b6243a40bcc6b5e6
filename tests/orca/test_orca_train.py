"""The trainer: learning a synthetic rating task, schedule, resume, curriculum and bad input."""

import json
import warnings

import pytest
import torch
from orca_fixtures import synthetic_items, tiny_config, tiny_trained_checkpoint, tiny_training

from orca_judge import OrcaJudge
from orca_judge.data import load_items
from orca_judge.training.curriculum import Stage, train_curriculum
from orca_judge.training.loop import epoch_batches, lr_multiplier, train
from orca_judge.training.model_init import build_model

TRAIN = load_items(synthetic_items(64, 1, "tr"))
DEV = load_items(synthetic_items(24, 2, "dv"))


def _dev_curve(run_dir):
    rows = [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
    return {r["step"]: r["dev"]["rho"] for r in rows if "dev" in r}


@pytest.mark.slow
def test_tiny_model_learns_the_synthetic_rating_task(tmp_path):
    training = tiny_training(max_steps=15)
    result = train(tiny_config(), TRAIN, DEV, tmp_path / "judge", training=training, progress=False)
    curve = _dev_curve(tmp_path / "judge-run")
    assert curve[0] < 0.6 and result.best_dev_rho > 0.85 and result.best_dev_rho - curve[0] > 0.3
    metrics = json.loads((tmp_path / "judge" / "metrics.json").read_text())
    assert metrics["dev"]["rho"] == pytest.approx(result.best_dev_rho)
    assert metrics["train_items"] == 64 and metrics["train_removed_over_max_chars"] == 0


def test_learning_rate_warms_up_then_decays_linearly_to_the_floor():
    training = tiny_training(warmup_steps=10, max_steps=110, lr_floor=0.1)
    assert [lr_multiplier(s, training) for s in (0, 5, 10, 60, 110)] == pytest.approx(
        [0, 0.5, 1, 0.55, 0.1]
    )


def test_epoch_batches_cover_every_item_once_and_depend_only_on_seed_and_epoch():
    lengths = [5 + (i * 7) % 13 for i in range(30)]
    batches = epoch_batches(lengths, 4, epoch=2, seed=0)
    assert sorted(i for b in batches for i in b) == list(range(30))
    assert batches == epoch_batches(lengths, 4, epoch=2, seed=0)
    assert batches != epoch_batches(lengths, 4, epoch=3, seed=0)


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_resumed_run_ends_exactly_like_an_uninterrupted_one(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=8, eval_every=2)
    train(cfg, TRAIN, DEV, tmp_path / "full", training=training, progress=False)

    def stop_at_five(step, record):
        if step == 5:
            raise Interrupt

    with pytest.raises(Interrupt):
        train(
            cfg,
            TRAIN,
            DEV,
            tmp_path / "cut",
            training=training,
            progress=False,
            on_step=stop_at_five,
        )
    resumed = train(cfg, TRAIN, DEV, tmp_path / "cut", training=training, progress=False)
    assert resumed.steps == 8
    full_log = [
        json.loads(x) for x in (tmp_path / "full-run" / "log.jsonl").read_text().splitlines()
    ]
    cut_log = [json.loads(x) for x in (tmp_path / "cut-run" / "log.jsonl").read_text().splitlines()]
    losses = {r["step"]: r["loss"] for r in full_log if "loss" in r}
    assert [r["loss"] for r in cut_log if r.get("step", 0) > 4 and "loss" in r][-3:] == [
        losses[6],
        losses[7],
        losses[8],
    ]
    full = OrcaJudge.from_pretrained(tmp_path / "full").model.head.weight
    cut = OrcaJudge.from_pretrained(tmp_path / "cut").model.head.weight
    assert torch.equal(full, cut)


def test_resume_with_a_different_configuration_is_refused(tmp_path):
    training = tiny_training(max_steps=2, eval_every=2)
    train(tiny_config(), TRAIN, DEV, tmp_path / "j", training=training, progress=False)
    with pytest.raises(ValueError, match=r"different configuration \(lr 0\.001 -> 0\.005\)"):
        train(
            tiny_config(),
            TRAIN,
            DEV,
            tmp_path / "j",
            training=training.replace(lr=5e-3),
            progress=False,
        )
    # A changed judge setting is refused the same way, naming it.
    with pytest.raises(ValueError, match=r"different configuration \(lora_r 4 -> 8\)"):
        train(tiny_config(lora_r=8), TRAIN, DEV, tmp_path / "j", training=training, progress=False)


def test_curriculum_stage_continues_from_the_previous_best_checkpoint(tmp_path):
    first = tiny_training(max_steps=6, eval_every=3)
    second = tiny_training(max_steps=3, eval_every=3, lr=1e-4)
    cfg = tiny_config()
    results = train_curriculum(
        [
            Stage("s1", cfg, TRAIN, DEV, training=first),
            Stage("s2", cfg, TRAIN, DEV, training=second),
        ],
        tmp_path / "judge",
        progress=False,
    )
    s2_start = _dev_curve(tmp_path / "judge-run")[0]
    assert s2_start == pytest.approx(results[0].best_dev_rho)
    assert (tmp_path / "judge-stages" / "s1" / "orca_judge.json").exists()
    assert (tmp_path / "judge" / "orca_judge.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["beta", "bernoulli"])
def test_beta_and_bernoulli_judges_train_and_score(tmp_path, likelihood):
    result = train(
        tiny_config(likelihood=likelihood),
        TRAIN,
        DEV,
        tmp_path / "j",
        training=tiny_training(max_steps=6),
        progress=False,
    )
    preds = OrcaJudge.from_pretrained(tmp_path / "j").score(DEV[:3])
    assert result.best_dev_rho > 0.5
    assert all((p.variance is None) == (likelihood == "bernoulli") for p in preds)
    # A clamp threshold of 0 given when loading turns clamping off, also without a variance
    # (a stored 0 clamps a Bernoulli judge by the margin alone).
    unclamped = OrcaJudge.from_pretrained(tmp_path / "j", clamp_threshold=0)
    assert unclamped.config.clamp_threshold is None
    assert unclamped.describe()["clamp_reason"] == "given when loading (clamping off)"
    assert all(p.clamped_unit == p.expected_unit for p in unclamped.score(DEV))


def test_items_over_the_character_limit_are_counted_not_silently_dropped(tmp_path):
    long = [
        it.__class__(**{**it.as_dict(), "ratings": it.ratings, "rationale": "x" * 2000})
        for it in TRAIN[:5]
    ]
    training = tiny_training(max_steps=2, eval_every=2)
    result = train(
        tiny_config(), long + TRAIN, DEV, tmp_path / "j", training=training, progress=False
    )
    assert (
        result.metrics["train_removed_over_max_chars"] == 5 and result.metrics["train_items"] == 64
    )


def test_unrated_training_items_are_rejected_by_id(tmp_path):
    unrated = load_items([{**synthetic_items(1, 9, "u")[0], "ratings": None}])
    with pytest.raises(ValueError, match="train item 'u-0' has no ratings"):
        train(
            tiny_config(),
            unrated + TRAIN,
            DEV,
            tmp_path / "j",
            training=tiny_training(),
            progress=False,
        )


@pytest.mark.parametrize(
    ("ratings", "reason"),
    [
        ([[3]] * 6, "all 6 items have the same mean rating 3"),
        ([[2]], "1 item; rho needs at least two"),
    ],
)
def test_a_dev_set_with_an_undefined_correlation_is_refused_before_training(
    tmp_path, ratings, reason
):
    dev = load_items(
        [
            {**synthetic_items(1, 3, "c")[0], "id": f"c{i}", "ratings": r}
            for i, r in enumerate(ratings)
        ]
    )
    with pytest.raises(ValueError, match=f"Spearman rho is undefined \\({reason}\\)"):
        training = tiny_training(max_steps=2, eval_every=2)
        train(tiny_config(), TRAIN, dev, tmp_path / "j", training=training, progress=False)
    assert not (tmp_path / "j").exists()


def test_continuing_from_a_checkpoint_builds_the_model_with_the_checkpoint_loader(monkeypatch):
    import orca_judge.training.model_init as train_module
    from orca_judge.checkpoint import load_model

    calls = []

    def spy(source, **kwargs):
        calls.append(kwargs)
        return load_model(source, **kwargs)

    monkeypatch.setattr(train_module, "load_model", spy)
    checkpoint = tiny_trained_checkpoint()
    model, tokenizer, fingerprint = build_model(tiny_config(), torch.device("cpu"), checkpoint)
    assert calls == [{"device": torch.device("cpu"), "dtype": "auto", "trainable": True}]
    judge = OrcaJudge.from_pretrained(checkpoint)
    assert torch.equal(model.head.weight, judge.model.head.weight)
    assert fingerprint == judge.backbone_fingerprint and len(tokenizer) == len(judge.tokenizer)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert "head.weight" in trainable and any("lora_" in n for n in trainable)


def test_continuing_with_another_pooling_is_refused():
    with pytest.raises(ValueError, match="'last' pooling, cannot continue with 'mean'"):
        build_model(tiny_config(pooling="mean"), torch.device("cpu"), tiny_trained_checkpoint())


def test_gradient_checkpointing_changes_memory_not_results(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=3, eval_every=1)
    assert training.gradient_checkpointing  # on by default
    plain = training.replace(gradient_checkpointing=False)
    kept = train(cfg, TRAIN, DEV, tmp_path / "kept", training=plain, progress=False)

    def stop_at_two(step, record):
        if step == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        train(
            cfg,
            TRAIN,
            DEV,
            tmp_path / "recomputed",
            training=training,
            progress=False,
            on_step=stop_at_two,
        )
    rows = [
        json.loads(x) for x in (tmp_path / "recomputed-run" / "log.jsonl").read_text().splitlines()
    ]
    steps = [r for r in rows if "loss" in r]
    assert len(steps) == 2 and all(r["peak_rss_mb"] > 50 for r in steps)
    # How a run computes is not what it computes: the resume switches it off.
    resumed = train(cfg, TRAIN, DEV, tmp_path / "recomputed", training=plain, progress=False)
    assert resumed.steps == 3
    assert resumed.best_dev_rho == pytest.approx(kept.best_dev_rho, abs=1e-6)
    a = OrcaJudge.from_pretrained(tmp_path / "kept").model.head.weight
    b = OrcaJudge.from_pretrained(tmp_path / "recomputed").model.head.weight
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_the_training_backbone_recomputes_activations_only_while_training():
    model, _, _ = build_model(tiny_config(), torch.device("cpu"))
    from orca_judge.training.model_init import enable_gradient_checkpointing

    with warnings.catch_warnings():
        # The current transformers API: its deprecated `gradient_checkpointing_*` names warn.
        warnings.simplefilter("error", FutureWarning)
        enable_gradient_checkpointing(model)
        assert model.backbone.get_base_model().is_activation_checkpointing
