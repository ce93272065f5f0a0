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
