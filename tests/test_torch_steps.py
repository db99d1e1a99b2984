"""The shared PyTorch step loop (reference/frameworks/pytorch/steps.py): zero steps, and a plain loop's steps."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from levelfield.reference.frameworks.pytorch.steps import run_steps  # noqa: E402


def _setup(seed: int = 0):
    """A linear model [4 -> 1], its SGD optimizer, 8 training rows and a mean-squared-error loss of given rows."""
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def loss(rows: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(model(x[rows]), y[rows])

    return model, optimizer, loss


@pytest.mark.parametrize("batch_indices", [np.zeros((0, 2), np.int64), []])
def test_zero_steps_return_no_losses_and_leave_the_model_alone(batch_indices):
    model, optimizer, loss = _setup()
    before = [p.detach().clone() for p in model.parameters()]
    losses = run_steps(loss, model, optimizer, batch_indices, np.zeros(0, np.float32), "cpu")
    assert losses.shape == (0,) and losses.dtype == np.float32
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert optimizer.state == {} or not any(optimizer.state.values())  # no step taken


def test_steps_match_a_plain_loop_with_each_steps_learning_rate():
    rows = np.array([[0, 1], [2, 3], [4, 5]], np.int64)
    rates = np.array([0.1, 0.05, 0.2], np.float32)
    model, optimizer, loss = _setup()
    losses = run_steps(loss, model, optimizer, rows, rates, "cpu")

    ref_model, ref_optimizer, ref_loss = _setup()
    expected = []
    for step_rows, lr in zip(rows, rates, strict=True):
        ref_optimizer.param_groups[0]["lr"] = float(lr)
        ref_optimizer.zero_grad()
        value = ref_loss(torch.from_numpy(step_rows))
        value.backward()
        ref_optimizer.step()
        expected.append(value.item())
    assert losses.dtype == np.float32 and losses.shape == (3,)
    np.testing.assert_array_equal(losses, np.asarray(expected, np.float32))
    assert optimizer.param_groups[0]["lr"] == float(rates[-1])
    for p, q in zip(model.parameters(), ref_model.parameters(), strict=True):
        assert torch.equal(p, q)
