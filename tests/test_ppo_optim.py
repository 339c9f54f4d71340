"""pufferbox's Adam matches torch.optim.Adam step for step, and its state round-trips."""

from __future__ import annotations

import torch

from pufferbox.train.optim import Adam


def test_matches_torch_adam():
    torch.manual_seed(0)
    ours_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref_model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref_model.load_state_dict(ours_model.state_dict())
    ours = Adam(ours_model.parameters(), lr=3e-3, eps=1e-5)
    ref = torch.optim.Adam(ref_model.parameters(), lr=3e-3, eps=1e-5)
    for step in range(20):
        x = torch.randn(16, 4)
        for model, opt in ((ours_model, ours), (ref_model, ref)):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        if step == 10:
            ours.param_groups[0]["lr"] = ref.param_groups[0]["lr"] = 1e-3  # annealing
    for a, b in zip(ours_model.parameters(), ref_model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip():
    w = torch.nn.Parameter(torch.ones(3))
    opt = Adam([w], lr=0.1)
    (w**2).sum().backward()
    opt.step()
    state = opt.state_dict()
    w2 = torch.nn.Parameter(w.detach().clone())
    opt2 = Adam([w2], lr=0.5)
    opt2.load_state_dict(state)
    for p, o in ((w, opt), (w2, opt2)):
        o.zero_grad()
        (p**2).sum().backward()
        o.step()
    torch.testing.assert_close(w, w2)
    assert opt2.param_groups[0]["lr"] == 0.1
