"""`core.jobfields.Fields`: one set of checks, each message naming the job and the field."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.jobfields import Fields, optional

FIELDS = Fields("test job")
CHECKS = {
    "name": FIELDS.named,
    "count": FIELDS.whole(1, 9),
    "rate": FIELDS.number(0),
    "colour": optional(FIELDS.choice(lambda: ["red", "blue"])),
}


def test_a_job_is_read_field_by_field():
    values = FIELDS.read('{"name": "a", "count": 3, "rate": 2, "colour": null}')

    assert FIELDS.checked(values, CHECKS, ("name",)) == {
        "name": "a",
        "count": 3,
        "rate": 2.0,
        "colour": None,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[", "test job: not JSON (Expecting value: line 1 column 2 (char 1))"),
        ("[1]", "test job: must be a JSON object, got list"),
        ('{"nam": "a"}', "test job: unknown key(s) nam; known: name, count, rate, colour"),
        ('{"count": 1}', "test job: missing name"),
        (
            '{"name": "a", "count": true}',
            "test job: count must be a whole number from 1 to 9, got True",
        ),
        ('{"name": "a", "rate": 0}', "test job: rate must be a number above 0, got 0"),
        (
            '{"name": "a", "colour": "green"}',
            "test job: colour must be one of red, blue, got 'green'",
        ),
    ],
)
def test_each_wrong_field_is_one_line_naming_it(text: str, message: str):
    with pytest.raises(ConfigError) as caught:
        FIELDS.checked(FIELDS.read(text), CHECKS, ("name",))

    assert str(caught.value) == message


def test_a_nested_object_names_its_field_before_its_keys():
    with pytest.raises(ConfigError) as caught:
        FIELDS.checked({"name": " "}, CHECKS, ("name",), within="inner")

    assert str(caught.value) == "test job: inner.name must be a name (text, not blank), got ' '"
    with pytest.raises(ConfigError, match=r"^test job: inner: missing name$"):
        FIELDS.checked({}, CHECKS, ("name",), within="inner")
