"""On a GPU: kernels agree with the references, and the step loop makes no host<->device copies."""

import numpy as np
import pytest

from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.registry import get_registry

REASON = gpu_unavailable_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=f"needs a CUDA GPU and PyCUDA ({REASON})")]


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("tag", {}),
        ("tag", {"num_runners": 40, "k_nearest": 5}),
        ("tag", {"num_taggers": 3, "num_runners": 60, "grid": 6, "k_nearest": 5}),  # cell index, filled in atomic order
        ("tag", {"num_taggers": 2, "num_runners": 10, "grid": 12, "k_nearest": 2, "cell_capacity": 4}),
        ("cuda_cartpole", {}),
        ("tag_continuous", {}),
        ("tag_continuous", {"num_runners": 40, "k_nearest": 5, "world": 8.0, "wall_penalty": -0.1}),
    ],
)
def test_gpu_kernel_matches_reference(name, kwargs):
    from pufferbox.cuda.consistency import check_env

    report = check_env(get_registry().get(name), num_envs=64, steps=200, device="gpu", env_kwargs=kwargs)
    assert report.ok, report.summary()


def test_step_and_sample_loop_has_no_host_device_copies():
    import torch

    import pufferbox.vector

    venv = pufferbox.vector.make("tag", backend="cuda", num_envs=256)
    obs, *_ = venv.recv()
    policy = torch.nn.Linear(obs.shape[1], 5).cuda()
    torch.cuda.synchronize()
    pushes = venv.kernel.data.pushes
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            probs = torch.softmax(policy(obs), dim=-1).contiguous()
            venv.sample(probs)
            venv.kernel.step()
        torch.cuda.synchronize()
    copies = [e for e in prof.events() if "Memcpy HtoD" in e.name or "Memcpy DtoH" in e.name]
    assert copies == [] and venv.kernel.data.pushes == pushes
    assert np.isfinite(venv.kernel.pull("rewards")).all()
