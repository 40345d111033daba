"""Fixtures shared by several test modules."""

import pytest

from multiharness.model import load_model_and_tokenizer, make_tiny_model


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A 2-layer random model with the default model's tokenizer and template: fast, learns nothing."""
    return load_model_and_tokenizer(make_tiny_model(tmp_path_factory.mktemp("tiny")))
