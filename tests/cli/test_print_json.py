"""`--json` output: what the standard library's json.dumps(default=str) would give, compact."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from datetime import UTC, datetime
from typing import Any, NamedTuple

from hypothesis import given
from hypothesis import strategies as st

from canary.cli.common import print_json
from canary.core.model import Layer


class Mark(NamedTuple):
    result: str
    round_id: int


LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.builds(Mark, st.text(), st.integers(0, 10**9))
    | st.sampled_from(list(Layer))
    | st.datetimes(timezones=st.just(UTC))
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers(-5, 5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(VALUES)
def test_the_json_reads_back_as_the_standard_librarys(value: Any) -> None:
    out = _printed(value)
    assert out.endswith("\n") and "\n" not in out[:-1]
    assert json.loads(out) == json.loads(json.dumps(value, ensure_ascii=False, default=str))


def test_times_keep_the_text_they_had_and_named_tuples_are_arrays() -> None:
    at = datetime(2026, 5, 1, 12, 0, 3, tzinfo=UTC)
    out = json.loads(_printed({"at": at, "mark": Mark("pass", 7), 3: "three"}))
    assert out == {"at": "2026-05-01 12:00:03+00:00", "mark": ["pass", 7], "3": "three"}


def _printed(value: Any) -> str:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        print_json(value)
    return buffer.getvalue()
