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


def _train_py_takes_input_context():
    """The rule as rung init's train.py has it (it runs where rung may not be installed):
    the function taken out of the template's text."""
    import ast
    from pathlib import Path

    from rung.launch.emit import Job, train_py

    text = train_py(Job("parameter_server", workers=2, ps_tasks=1), Path("workload.py"))
    [fn] = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "takes_input_context"]
    space: dict = {}
    exec(compile(ast.Module([fn], []), "train.py", "exec"), space)  # noqa: S102 - rung's own template
    return space["takes_input_context"]


def test_a_second_parameter_with_a_default_of_its_own_is_a_setting_not_the_input_context():
    """`def make_dataset(batch_size, training=True)` was handed None by rung profile (and an
    InputContext under multi-worker): the profile timed a pipeline the file never runs by
    default (seen: its `training` printed None). Only a second positional parameter with no
    default or a default of None, or *args, takes the context; rung profile, rung bench and
    train.py read it by one rule."""
    from rung.measure.workload import context_defaults_to_none, takes_input_context

    def context_none(batch_size, input_context=None): ...
    def context_required(batch_size, ctx): ...
    def star(batch_size, *args): ...
    def batch_only(batch_size): ...
    def a_flag(batch_size, training=True): ...
    def a_number(batch_size, buffer=1024): ...
    def keywords(batch_size, **kwargs): ...
    def keyword_only(batch_size, *, input_context=None): ...  # rung passes it positionally

    def load(batch_size, split="eval", input_context=None): ...

    import functools

    # a keyword fixed by partial makes the parameters after it keyword-only (they were
    # passed the context positionally, into `split`, and failed)
    partial = functools.partial(load, split="train")

    expected = {context_none: True, context_required: True, star: True, batch_only: False, a_flag: False,
                a_number: False, keywords: False, keyword_only: False, partial: False}
    in_train_py = _train_py_takes_input_context()
    for fn, takes in expected.items():
        name = getattr(fn, "__name__", "partial")
        assert takes_input_context(fn) is takes, name
        assert in_train_py(fn) is takes, name
    # the wrapper that gives a required context its None keeps the signature the rule reads
    assert takes_input_context(context_defaults_to_none(context_required)) is True
    assert takes_input_context(len) is False  # no signature to read
