"""The reward: correctness first, a small bonus for few tool calls, None when not graded."""

import pytest

from multiharness.reward import TOOL_BONUS, TOOL_BUDGET, reward

# (correctness, tool_calls, expected reward)
CASES = [
    pytest.param(None, 4, None, id="not-graded-is-none-not-zero"),
    pytest.param(None, None, None, id="not-graded-without-tool-count"),
    pytest.param(0, 4, 0.0, id="wrong-answer-earns-nothing"),
    pytest.param(0, 0, 0.0, id="wrong-answer-without-tools"),
    pytest.param(1, None, 1.0, id="tool-count-unknown-no-bonus"),
    pytest.param(1, 0, 1.0, id="no-tools-no-bonus"),
    pytest.param(1, 1, 1.09375, id="one-call-largest-bonus"),
    pytest.param(1, 15, 1.05, id="bonus-halves-at-the-budget"),
    pytest.param(1, 45, 1.025, id="bonus-fades-with-more-calls"),
    pytest.param(0.5, 15, 0.525, id="partial-correctness-scales-the-bonus"),
]


@pytest.mark.parametrize("correctness, tool_calls, expected", CASES)
def test_reward(correctness, tool_calls, expected):
    assert reward(correctness, tool_calls) == (None if expected is None else pytest.approx(expected))


def test_bonus_never_exceeds_ten_percent_and_never_goes_negative():
    rewards = [reward(1, calls) for calls in range(1, 10_000)]
    assert (TOOL_BONUS, TOOL_BUDGET) == (0.1, 15) and all(1 < value <= 1 + TOOL_BONUS for value in rewards)


def test_more_tool_calls_never_earn_more():
    rewards = [reward(1, calls) for calls in range(1, 200)]
    assert rewards == sorted(rewards, reverse=True)


def test_negative_tool_count_is_a_bug():
    with pytest.raises(ValueError, match="tool_calls"):
        reward(1, -1)
