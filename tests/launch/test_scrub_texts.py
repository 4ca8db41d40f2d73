"""launch.config.secrets.scrub_texts scrubs many texts (a run's provenance keys) in one scrub when that
changes nothing: whatever the texts hold, the result is `scrub_text` of each (adversarial pieces: secret
values whole and in part, shapes cut at the edges, URL passwords, query parameters and references split
across two texts, spaces and line breaks at the joins)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from launch.config.secrets import scrub_text, scrub_texts
from tests.launch.test_credentials_one_scan import PIECES

SECRET = "s3cr3tValue99"
MORE = (
    SECRET,
    "s3cr3t",
    "Value99",
    "https://user:",
    "pw@host",
    "://",
    "@",
    "/",
    ".",
    "?token=",
    "env:X",
    "&key=",
)
TEXT = st.lists(st.sampled_from(PIECES + MORE), max_size=6).map("".join)


@given(st.lists(TEXT, max_size=6))
@settings(max_examples=400, deadline=None)
def test_the_same_as_scrubbing_each(texts: list[str]) -> None:
    assert scrub_texts(texts, [SECRET]) == [scrub_text(text, [SECRET]) for text in texts]


def test_texts_that_hold_nothing_are_returned_as_they_are() -> None:
    keys = ["model.hf_id", "stages.train.curriculum.max_num_steps", "env.data.categories.0"]
    assert scrub_texts(keys, [SECRET]) == keys
    assert scrub_texts([*keys, f"hardware.env_vars.{SECRET}"], [SECRET])[-1] == "hardware.env_vars.***"
