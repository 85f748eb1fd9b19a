import pytest
from grpo_trainer.model.packing import padded_tokens, token_micro_batches


def test_groups_by_padded_size_longest_first():
    # lengths by index: 0:100 1:900 2:300 3:250 4:1200 5:280
    groups = token_micro_batches([100, 900, 300, 250, 1200, 280], max_tokens=1000)
    # 1200 alone (over budget); 900 alone (2 x 900 > 1000); 300, 280, 250: 3 x 300 = 900 <= 1000,
    # a fourth would make 4 x 300 = 1200; 100 starts the last group
    assert groups == [[4], [1], [2, 5, 3], [0]]
    assert [padded_tokens([[100, 900, 300, 250, 1200, 280][i] for i in g]) for g in groups] == [
        1200,
        900,
        900,
        100,
    ]


def test_every_sample_once_and_ties_in_input_order():
    groups = token_micro_batches([5, 5, 5, 5, 5], max_tokens=10)
    assert groups == [[0, 1], [2, 3], [4]]
    assert token_micro_batches([], max_tokens=10) == []


def test_budget_must_be_positive():
    with pytest.raises(ValueError, match="max_tokens must be >= 1"):
        token_micro_batches([1], 0)


def test_padding_free_groups_are_budgeted_by_their_summed_lengths():
    # lengths by index: 0:100 1:900 2:300 3:250 4:1200 5:280; sorted 1200, 900, 300, 280, 250, 100
    groups = token_micro_batches([100, 900, 300, 250, 1200, 280], max_tokens=1000, padded=False)
    # 1200 alone; 900 + 300 > 1000; 300 + 280 + 250 = 830, + 100 = 930 <= 1000 (padded: 4 x 300)
    assert groups == [[4], [1], [2, 5, 3, 0]]
