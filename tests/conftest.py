"""Fixtures shared by several test modules."""

import pytest

from multiharness.model import load_model_and_tokenizer, make_tiny_model
from multiharness.tasks import load_task
from multiharness.tasks.build import build_task, load_manifest


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A 2-layer random model with the default model's tokenizer and template: fast, learns nothing."""
    return load_model_and_tokenizer(make_tiny_model(tmp_path_factory.mktemp("tiny")))


@pytest.fixture(scope="session")
def easy_test_task(tmp_path_factory):
    """The first easy task of the test split, built from the committed manifest."""
    row = next(r for r in load_manifest("test") if r["difficulty"] == "easy")
    path = tmp_path_factory.mktemp("tasks") / row["id"]
    build_task(row, path)
    return load_task(path)
