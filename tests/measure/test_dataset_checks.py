"""Pure checks of what make_dataset yields (no TensorFlow)."""


def test_an_element_of_single_examples_is_told_from_a_batch():
    from rung.measure.workload import unbatched

    # (features of 32 values, a class label): one example
    assert "labels are scalars" in unbatched([("features", (32,)), ("labels", ())])
    # one-hot labels of 10 beside 32 features: first dimensions differ
    assert "first dimensions differ" in unbatched([("features", (32,)), ("labels", (10,))])
    # batches: known or unknown batch dimension, dict features, features alone, images
    assert unbatched([("features", (None, 32)), ("labels", (None,))]) == ""
    assert unbatched([("features", (64, 8)), ("features", (64,)), ("labels", (64, 1))]) == ""
    assert unbatched([("features", (None, 28, 28, 1))]) == ""
    assert unbatched([("features", (None, 8)), ("labels", (64,))]) == ""
    # unknown ranks tell nothing
    assert unbatched([]) == ""


def test_a_make_dataset_whose_input_context_has_no_default_gets_none_when_called_with_the_batch_alone():
    """TensorFlow's guides write `def dataset_fn(input_context)` with the context required;
    rung calls make_dataset(batch) on one device and under MirroredStrategy (the bench's
    runs, as train.py's): that call passes None, workload v1's default. Other signatures are
    left as they are, and the signature rung reads (does it take a context?) is unchanged."""
    import inspect

    from rung.measure.workload import context_defaults_to_none

    def required(batch_size, input_context):
        return batch_size, input_context

    wrapped = context_defaults_to_none(required)
    assert wrapped(8) == (8, None)
    assert wrapped(8, "ctx") == (8, "ctx") and wrapped(8, input_context="ctx") == (8, "ctx")
    assert list(inspect.signature(wrapped).parameters) == ["batch_size", "input_context"]

    def defaulted(batch_size, input_context=None):
        return batch_size, input_context

    def batch_only(batch_size):
        return batch_size

    def keyword_only(batch_size, *, input_context):
        return batch_size, input_context

    for fn in (defaulted, batch_only, keyword_only, len):
        assert context_defaults_to_none(fn) is fn
