"""The optimisation attack's step size against the exact least-squares inverse on a random
projection with Gaussian noise (variance 100): attack MSE / least-squares MSE per step size.

    python docs/reproductions/dfil-synthetic-crb/step_size.py D M N
"""

import sys
import time

import torch

from attacks.optimization import OptimizationAttack
from mechanisms.dfil.smooth_nets import Projection


def main(d: int, m: int, n: int, variance: float = 100.0) -> None:
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(1)
    proj = Projection(d, m, gen).requires_grad_(False)
    x = 0.05 * torch.randn(n, d, generator=gen)
    released = proj(x) + variance**0.5 * torch.randn(n, m, generator=gen)
    exact = released @ proj.weight
    for lr in (0.1, 1.0):
        attack = OptimizationAttack(max_steps=1500, rel_tol=1e-5, lr=lr)
        attack.device = torch.device("cpu")
        attack.generator = torch.Generator().manual_seed(0)
        attack.encoder, attack.input_shape = proj, (d,)
        start = time.time()
        x_hat = attack.invert(released)
        ratio = float(((x_hat - x) ** 2).mean()) / float(((exact - x) ** 2).mean())
        print(d, m, n, lr, f"attack/ls mse {ratio:.5f}", f"{time.time() - start:.1f}s", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
