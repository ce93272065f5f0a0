"""Reading YAML/JSON files for rung: numbers like `25.6e6` are floats (YAML 1.2),
duplicate keys are an error, and every failure is an InputError naming the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from rung.errors import InputError


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads `1e6` and `25.6e6` as floats (PyYAML follows YAML 1.1,
    which wants `25.6e+6`) and rejects a key written twice in one mapping."""


_FLOAT_12 = re.compile(
    r"""^(?:[-+]?(?:\d[\d_]*)?(?:\.[\d_]*)?(?:[eE][-+]?\d+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+0123456789."))


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is written twice", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _float_or_str(loader: _Loader, node: yaml.ScalarNode):
    text = loader.construct_scalar(node)
    if not any(ch.isdigit() for ch in text) and text.lower() not in (".inf", "-.inf", "+.inf", ".nan"):
        return text  # "." or "-" alone: a string, as YAML 1.2 says
    return yaml.SafeLoader.construct_yaml_float(loader, node)


_Loader.add_constructor("tag:yaml.org,2002:float", _float_or_str)


def load_mapping(path: str | Path, what: str = "file") -> dict[str, Any]:
    """Load a YAML or JSON file that must hold one mapping."""
    p = Path(path)
    where = str(path)
    if not p.exists():
        raise InputError(where, None, f"no such {what}")
    if p.is_dir():
        raise InputError(where, None, f"is a directory; expected a YAML or JSON {what}")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(where, None, "is not UTF-8 text; expected a YAML or JSON file") from None
    except OSError as e:
        raise InputError(where, None, f"cannot be read ({e.strerror})") from None
    if not text.strip():
        raise InputError(where, None, "is empty; expected a YAML or JSON mapping")
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(where, None, f"is not valid YAML or JSON ({at}{problem})") from None
    if not isinstance(data, dict):
        raise InputError(where, None, f"holds a {type(data).__name__}; expected a mapping of keys")
    return data
