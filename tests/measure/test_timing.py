"""rung.measure.timing's gate on the step under mirrored variables: by hand, and on a real
step whose strategy-built model would fail if it were built."""

from __future__ import annotations

import pytest

from rung.measure import timing


def test_sparse_table_bytes_counts_float32_rows_and_the_optimizers_share_of_slots():
    # 1,000 rows of 16 float32 in a model of 20,000 parameters whose Adam keeps 2 slots of each
    # (160,000 bytes of slots): 64,000 bytes of table and 2 x 64,000 of its slots
    assert timing.sparse_table_bytes(16_000, 20_000, 160_000) == 192_000
    assert timing.sparse_table_bytes(16_000, 20_000, 0) == 64_000  # SGD: the table alone


def test_copies_that_cannot_reach_a_quarter_of_the_step_are_not_timed():
    # keras.io's ViT here: 108 KiB of position table and AdamW slots, 13.5 GB/s, a 454 ms
    # step: 4 copies 32 µs, against 114 ms
    assert not timing.strategy_extra_can_show(110_592, 13.5e9, 0.454)
    # docs/model.md's table: 1M x 64 float32 under Adagrad (256 MB and as much of slot), a
    # 0.3 ms step: 4 copies of 512 MB at 13.5 GB/s, 152 ms, far above 75 µs
    assert timing.strategy_extra_can_show(512e6, 13.5e9, 0.0003)
    # at the line: 4 x 1 MB / 1 GB/s = 4 ms against a quarter of 16 ms, then of 15.9 ms
    assert not timing.strategy_extra_can_show(1e6, 1e9, 0.016)
    assert timing.strategy_extra_can_show(1e6, 1e9, 0.0159)
    # nothing read: timed, as before the gate
    assert timing.strategy_extra_can_show(1e6, 0.0, 0.016) and timing.strategy_extra_can_show(1e6, 1e9, 0.0)


@pytest.mark.tf  # beside other tests (not serial): its two cases sit a million times either side of the line
def test_a_table_whose_copies_cannot_show_builds_nothing_under_the_strategy():
    from rung.measure.tfenv import import_tensorflow

    tf = import_tensorflow()
    from rung.measure.timing import make_step_function

    def build():
        ids = tf.keras.Input((1,), dtype="int64")
        x = tf.keras.layers.Flatten()(tf.keras.layers.Embedding(100, 8)(ids))
        model = tf.keras.Model(ids, tf.keras.layers.Dense(1)(x))
        model.compile(optimizer="sgd", loss="mse")
        return model

    built = []

    def build_under_strategy():
        built.append(1)
        return build()

    model = build()
    batches = [(tf.constant([[i % 100]] * 32, tf.int64), tf.ones((32, 1))) for i in range(timing.STRATEGY_ROUND_STEPS)]
    step = make_step_function(tf, model)
    device = "/CPU:0"
    small = timing.strategy_extra(tf, build_under_strategy, step, batches, device, table_bytes=3_200)
    assert small.skipped and small.strategy_seconds is None and small.extra_seconds == 0.0 and not built
    assert small.plain_seconds > 0 and small.copy_bytes_per_second > 1e8
    assert small.skipped.startswith("4 copies of its sparsely updated tables and their optimizer slots (3.12 KiB)")
    # a table no step could copy in a quarter of itself (1 TB): timed under the strategy
    large = timing.strategy_extra(tf, build_under_strategy, step, batches, device, table_bytes=1e12)
    assert large.skipped is None and large.strategy_seconds > 0 and built == [1]
    # and without the table's size, as before the gate
    timing.strategy_extra(tf, build_under_strategy, step, batches, device)
    assert built == [1, 1]
