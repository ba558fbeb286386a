import sys, time, torch
sys.path.insert(0, ".")
from attacks.optimization import OptimizationAttack
from mechanisms.dfil.smooth_nets import Projection
torch.set_num_threads(1)
d, m, n, var = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), 100.0
gen = torch.Generator().manual_seed(1)
proj = Projection(d, m, gen).requires_grad_(False)
x = 0.05 * torch.randn(n, d, generator=gen)
o = proj(x) + var**0.5 * torch.randn(n, m, generator=gen)
exact = o @ proj.weight
for lr in (0.1, 1.0):
    a = OptimizationAttack(max_steps=1500, rel_tol=1e-5, lr=lr)
    a.device = torch.device("cpu"); a.generator = torch.Generator().manual_seed(0)
    a.encoder, a.input_shape = proj, (d,)
    t = time.time(); xh = a.invert(o)
    r = float(((xh - x) ** 2).mean()) / float(((exact - x) ** 2).mean())
    print(d, m, n, lr, f"attack/ls mse {r:.5f}", f"{time.time()-t:.1f}s", flush=True)
