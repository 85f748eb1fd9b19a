"""MenuPolicy reads its history from the agent loop's context and gives only plan continuations."""

import pytest
import torch
from desktop_menu import one_cell_plans
from grpo_trainer.errors import ConfigError, GRPOError
from grpo_trainer.model.menu_policy import MenuPolicy
from hybrid_agent.messages import text_part
from hybrid_agent.parse import extract_action_line
from hybrid_agent.prompt import current_turn_text

PLANS = one_cell_plans("calc-fix-cell@1000")
RIGHT, SAVE, DONE = PLANS[0]
WRONG = PLANS[2][0]


def _context(*done: str) -> list:
    """The last user turn as the context builder writes it, after the responses ``done``."""
    history = [extract_action_line(response) for response in done]
    return [{"role": "user", "content": [text_part(current_turn_text("Fix the cell.", history))]}]


def test_the_plans_are_the_oracle_and_three_single_decision_misses():
    assert PLANS[0] == [RIGHT, SAVE, DONE]
    assert "value='66'" in RIGHT and "value='67'" in WRONG
    assert sorted(map(len, PLANS)) == [2, 2, 3, 3]


def test_the_history_comes_from_the_previous_actions_of_the_context():
    policy = MenuPolicy(PLANS)
    assert policy.encode(_context()) == [policy.start]
    right, save = policy.responses.index(RIGHT), policy.responses.index(SAVE)
    assert policy.encode(_context(RIGHT, SAVE)) == [policy.start, right, save]


def test_branch_points_carry_the_gradient_and_forced_responses_have_log_probability_zero():
    policy = MenuPolicy(PLANS)
    right, save, done = (policy.responses.index(r) for r in (RIGHT, SAVE, DONE))
    root, after_write, forced = [policy.start], [policy.start, right], [policy.start, right, save]
    logp = policy.logprobs([root, after_write, forced], [[right], [save], [done]])
    # Two options at the root and after the write; the save leaves one response.
    assert torch.allclose(logp, torch.log(torch.tensor([[0.5], [0.5], [1.0]])))
    logp.sum().backward()
    grad = policy.logits.grad
    assert grad is not None and grad[policy._rows[(right, save)]].abs().sum() == 0
    assert grad[policy._rows[()]].abs().sum() > 0


def test_samples_are_seeded_and_stay_on_the_tree():
    policy = MenuPolicy(PLANS)
    after_wrong = [policy.start, policy.responses.index(WRONG)]

    def draw(seed):
        return policy.sample([after_wrong] * 32, 1.0, torch.Generator().manual_seed(seed))

    first = draw(3)
    assert [s.text for s in first] == [s.text for s in draw(3)]
    assert {s.text for s in first} == {SAVE, DONE}


def test_an_action_off_the_menu_or_a_duplicate_summary_is_refused():
    policy = MenuPolicy(PLANS)
    stranger = "Action: click somewhere\n<tool_call>\n{}\n</tool_call>"
    with pytest.raises(GRPOError, match="not on this policy's menu"):
        policy.encode(_context(stranger))
    with pytest.raises(GRPOError, match="continues no plan"):
        policy.logprobs([[policy.start, policy.responses.index(DONE)]], [[0]])
    with pytest.raises(ConfigError, match="own Action: line"):
        MenuPolicy([[RIGHT], [RIGHT.replace('66"}', '67"}')]])
