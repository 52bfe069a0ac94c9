"""Typed reads out of one config dict, each failure naming the key, the value and the range the
ModelSpec field allows, and each success recording where the spec field came from."""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from pydantic.fields import FieldInfo

from advisor.catalog.hf.errors import PREFIX, HFConfigError, json_type, show
from advisor.catalog.specs import ModelSpec

#: A key the config does not have (JSON null is None, a different answer).
ABSENT: Any = object()


def spec_bounds(field: str) -> tuple[float | None, float | None]:
    """(ge, le) of a ModelSpec integer field, read from its pydantic metadata.

    >>> spec_bounds("num_hidden_layers")
    (1, 1024)
    """
    info = ModelSpec.model_fields[field]
    metas: list[Any] = list(info.metadata)
    for arg in get_args(info.annotation):
        if get_origin(arg) is Annotated:
            for m in get_args(arg)[1:]:
                metas.extend(m.metadata if isinstance(m, FieldInfo) else [m])
    lo = next((m.ge for m in metas if hasattr(m, "ge")), None)
    hi = next((m.le for m in metas if hasattr(m, "le")), None)
    return lo, hi


def int_range(lo: float | None, hi: float | None) -> str:
    """The allowed range as a message states it.

    >>> int_range(1, 8), int_range(0, None), int_range(None, None)
    ('an integer from 1 to 8', 'an integer >= 0', 'an integer')
    """
    if lo is not None and hi is not None:
        return f"an integer from {lo} to {hi}"
    if lo is not None:
        return f"an integer >= {lo}"
    return "an integer"


class Reader:
    """Reads typed values out of one config dict and records where each spec field came from.

    ``family`` names the model in messages; ``hf_class`` is the transformers configuration class
    whose defaults are cited.
    """

    def __init__(self, cfg: dict[str, Any], family: str, hf_class: str, source: str):
        self.cfg = cfg
        self.family = family
        self.hf_class = hf_class
        self.source = source
        self.sources: dict[str, str] = {}

    # -- raw access ---------------------------------------------------------------------------
    def raw(self, *keys: str) -> tuple[str, Any]:
        """(key used, value) for the first of ``keys`` present; aliases must agree."""
        found = [(k, self.cfg[k]) for k in keys if k in self.cfg]
        if not found:
            return keys[0], ABSENT
        for k, v in found[1:]:
            if v != found[0][1] or type(v) is not type(found[0][1]):
                raise HFConfigError(
                    f"{PREFIX}: {found[0][0]!r}={show(found[0][1])} and {k!r}={show(v)} "
                    "name the same setting but disagree"
                )
        return found[0]

    def note(self, field: str, how: str | None = None) -> None:
        self.sources[field] = self.source if how is None else f"{self.source} ({how})"

    def default(self, field: str, key: str, value: Any) -> None:
        self.note(field, f"{key!r} absent: transformers {self.hf_class} default {value!r}")

    # -- typed readers ------------------------------------------------------------------------
    def check_int(
        self,
        key: str,
        value: Any,
        *,
        field: str | None = None,
        lo: float | None = None,
        hi: float | None = None,
    ) -> int:
        if field is not None:
            lo, hi = spec_bounds(field)
        allowed = int_range(lo, hi)
        target = f" ({field})" if field is not None and field != key else ""
        if isinstance(value, bool) or not isinstance(value, int):
            raise HFConfigError(
                f"{PREFIX}: {key!r}{target} must be {allowed}, got {show(value)} "
                f"({json_type(value)})"
            )
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise HFConfigError(
                f"{PREFIX}: {key!r}{target}={value} is out of range; allowed: {allowed}"
            )
        return value

    def req_int(self, *keys: str, field: str) -> int:
        """A required integer (a size the importer will not guess)."""
        key, value = self.raw(*keys)
        if value is ABSENT or value is None:
            lo, hi = spec_bounds(field)
            alias = f" (or {', '.join(repr(k) for k in keys[1:])})" if len(keys) > 1 else ""
            what = "missing" if value is ABSENT else "null"
            raise HFConfigError(
                f"{PREFIX}: {what} {key!r}{alias}, needed for a {self.family} model "
                f"({int_range(lo, hi)})"
            )
        out = self.check_int(key, value, field=field)
        self.note(field)
        return out

    def opt_int(
        self,
        *keys: str,
        field: str | None = None,
        lo: float | None = None,
        hi: float | None = None,
    ) -> tuple[str, int | None | Any]:
        """(key, value) with value an int, None (JSON null) or ABSENT."""
        key, value = self.raw(*keys)
        if value is ABSENT or value is None:
            return key, value
        return key, self.check_int(key, value, field=field, lo=lo, hi=hi)

    def opt_bool(self, key: str, default: bool) -> tuple[bool, bool]:
        """(value, present). JSON null is refused: these flags have no 'unset' meaning."""
        value = self.cfg.get(key, ABSENT)
        if value is ABSENT:
            return default, False
        if not isinstance(value, bool):
            raise HFConfigError(
                f"{PREFIX}: {key!r} must be true or false, got {show(value)} ({json_type(value)})"
            )
        return value, True

    def flag(self, field: str, key: str, default: bool) -> bool:
        value, present = self.opt_bool(key, default)
        if present:
            self.note(field)
        else:
            self.default(field, key, default)
        return value

    def int_with_default(self, field: str, key: str, default: int, *aliases: str) -> int:
        """An integer whose absence means a transformers default (JSON null is refused)."""
        k, value = self.opt_int(key, *aliases, field=field)
        if value is None:
            lo, hi = spec_bounds(field)
            raise HFConfigError(f"{PREFIX}: {k!r} is null; expected {int_range(lo, hi)}")
        if value is ABSENT:
            self.default(field, k, default)
            return default
        self.note(field)
        return value

    def layer_types(self, num_layers: int) -> int | None:
        """Number of "sliding_attention" entries in ``layer_types``, or None when absent/null."""
        value = self.cfg.get("layer_types")
        if value is None:
            return None
        allowed = ("full_attention", "sliding_attention")
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HFConfigError(
                f"{PREFIX}: 'layer_types' must be a list of strings ({' / '.join(allowed)}), "
                f"got {show(value)}"
            )
        if len(value) != num_layers:
            raise HFConfigError(
                f"{PREFIX}: 'layer_types' has {len(value)} entries but num_hidden_layers="
                f"{num_layers}; need one per layer"
            )
        bad = sorted({v for v in value if v not in allowed})
        if bad:
            raise HFConfigError(
                f"{PREFIX}: 'layer_types' has unsupported entries {bad}; allowed: "
                f"{', '.join(allowed)}"
            )
        return value.count("sliding_attention")
