"""The console's progress line (``agents.run.progress_line``) is built from the metric names a chunk's record holds:
one place formats what PPO, A2C, online cloning and a dataset clone report."""

from __future__ import annotations

import math

from agents.run.progress_line import loss_parts, progress_line

LOSSES = {"loss/entropy": 3.125, "loss/value": 0.0414}


def test_every_trainer_reports_its_entropy_and_value_loss():
    assert loss_parts(LOSSES) == ["entropy 3.12 | value loss 0.041"]


def test_online_cloning_reports_the_new_games_before_what_it_trained_on():
    record = {
        **LOSSES,
        "loss/accuracy": 0.5,
        "loss/cross_entropy": 1.234,
        "val/accuracy": 0.25,
        "val/cross_entropy": 2.5,
    }
    assert loss_parts(record) == [
        "new games: teacher's action 25%, cross-entropy 2.50",
        "trained on: teacher's action 50% | cross-entropy 1.23",
        "entropy 3.12 | value loss 0.041",
    ]


def test_a_dataset_clone_reports_its_validation_and_its_best():
    record = {
        **LOSSES,
        "loss/accuracy": 0.5,
        "loss/cross_entropy": 1.234,
        "val/accuracy": 0.75,
        "val/cross_entropy": 0.8,
        "val/best_cross_entropy": 0.7,
    }
    assert loss_parts(record) == [
        "trained on: teacher's action 50% | cross-entropy 1.23",
        "validation: teacher's action 75%, cross-entropy 0.800 (best 0.700)",
        "entropy 3.12 | value loss 0.041",
    ]
    # with the held-out placements' accuracy (a finite one: a recording without placements leaves it out)
    assert loss_parts({**record, "val/accuracy_place": 0.0625})[1] == (
        "validation: teacher's action 75% (placements 6%), cross-entropy 0.800 (best 0.700)"
    )
    assert loss_parts({**record, "val/accuracy_place": float("nan")})[1] == loss_parts(record)[1]


def test_the_line_names_throughput_placement_return_and_the_evaluation():
    record = {**LOSSES, "perf/seat_sps": 5120.4, "train/placement": 4.206, "train/episode_return": 0.1}
    evaluation = {"eval/placement_vs_greedy": 3.5, "eval/placement_vs_random": 1.25, "eval/rating": 12.34}
    line = progress_line(record, evaluation, "seat-steps", self_play=False)
    assert line == (
        "5120 seat-steps/s | place 4.21 | ret 0.10 | vs random 1.25 | vs greedy 3.50 | rating 12.3 | "
        "entropy 3.12 | value loss 0.041"
    )
    # pure self-play places 4.5 by symmetry: not shown; a return that is not finite (no episode ended) neither
    quiet = progress_line({**record, "train/episode_return": math.nan}, {}, "samples", self_play=True)
    assert quiet == "5120 samples/s | entropy 3.12 | value loss 0.041"
