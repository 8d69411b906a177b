"""Host time of DeepSpeed ZeRO-3's per-module fetch and release, by parameters per module. A CPU probe, no GPU.

    python benchmarks/zero3_host_probe.py                     # 2 gloo ranks, N = 1, 3, 8, 32 parameters per module
    python benchmarks/zero3_host_probe.py --params 1 3 --modules 48 --steps 12

Two ranks (gloo, same data) run a chain of ``--modules`` modules, each holding N weights of 64 x 64 (above the
persistence threshold, set to 0) and doing ``x = x + x @ w`` per weight, under DeepSpeed ZeRO-3 with prefetch on
(the trace is complete after the first step). The probe wraps the four methods DeepSpeed's module hooks call
(``DeepSpeedZeRoOffload.pre/post_sub_module_forward/backward_function`` in
deepspeed/runtime/zero/parameter_offload.py: trace bookkeeping, ``fetch_sub_module`` with its all-gather launches,
the handle ``wait`` that splits the gathered buffer into the parameters, the prefetch of the next modules,
``release_sub_module`` and ``param.partition``) and reports their host time per module fetch, forward and backward.

The collective is taken out: ``partition_parameters._dist_allgather_fn`` is replaced by a local copy that returns a
completed handle, and the time spent inside that replacement is subtracted, so the figures are DeepSpeed's Python
and tensor bookkeeping without any all-gather transfer or NCCL launch. Also absent on a CPU accelerator
(``is_synchronized_device()``): ``record_stream`` per gathered slice, CUDA events and stream switches. The figures
are therefore a lower bound of the host time per fetch on a GPU node, and they scale with the host CPU's single-thread
speed (state the machine with the numbers).

Times are thread CPU time (``time.thread_time``), so a busy machine stretches them less than wall time; the
forward "every hook" column is the engine's forward less the same model's forward without DeepSpeed, per module
(it adds the autograd functions DeepSpeed wraps around each module's inputs and outputs for its backward hooks).

Measured 2026-12-06 with DeepSpeed 0.19.8, torch 2.13.0+cpu, Python 3.11, on a shared 2-core AMD EPYC VM (load
about 3), ``--modules 24 --steps 8``, two runs (us per module fetch):

    weights/module   forward (pre+post)   backward (pre+post)   forward, every hook
                 1          142-144              105-110               317-330
                 3          174-285              122-207               325-503
                32        1,106-1,503              716-1,089           1,348-1,920
               385       14,609-19,509          9,360-12,560         13,855-24,056

A third run (load about 1) added the backward's whole time less the plain model's, which also holds the ZeRO
gradient hook per weight and the step's reduce-scatter: 407 / 411 / 2,250 us per module at 1 / 3 / 32 weights,
61 us per extra weight of which the fetch path is ~19 (the rest ~40 us per weight, next to the 50 us prior of
``zero_hook_seconds``). A one-weight module's forward costs ~0.33 ms of host time (``zero3_host_seconds``); each further weight 20-50 us
(``zero3_host_param_seconds`` = 3e-5 s; src/trainfit/estimate/engines.py, docs/speed-model.md). The fetch, wait and
release code is the same in v0.16.9 (the DeepSpeed of ms-swift's 2025 examples) apart from 0.19.8's backward lock
for leaf modules and its recompute bookkeeping.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def _worker(rank: int, world: int, args: argparse.Namespace, port: int, out) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    import logging

    import deepspeed
    import torch
    import torch.nn as nn
    from deepspeed.runtime.zero import partition_parameters as pp
    from deepspeed.runtime.zero.parameter_offload import DeepSpeedZeRoOffload
    from deepspeed.utils import logger

    logger.setLevel(logging.WARNING)
    torch.set_num_threads(1)
    stub_s = [0.0]

    class _Done:
        def wait(self):
            return None

        def is_completed(self):
            return True

    def fake_allgather(input_tensor, output_tensor, group=None):
        t0 = time.thread_time()
        n = input_tensor.numel()
        for r in range(output_tensor.numel() // n):
            output_tensor.narrow(0, r * n, n).copy_(input_tensor)
        stub_s[0] += time.thread_time() - t0
        return _Done()

    pp._dist_allgather_fn = fake_allgather

    timers = {"fwd": [0.0, 0], "bwd": [0.0, 0]}

    def wrap(name, kind):
        orig = getattr(DeepSpeedZeRoOffload, name)

        def timed(self, sub_module):
            s0 = stub_s[0]
            t0 = time.thread_time()
            orig(self, sub_module)
            timers[kind][0] += time.thread_time() - t0 - (stub_s[0] - s0)
            if name.startswith("pre"):
                timers[kind][1] += 1 if any(True for _ in sub_module.parameters(recurse=False)) else 0
        setattr(DeepSpeedZeRoOffload, name, timed)

    wrap("pre_sub_module_forward_function", "fwd")
    wrap("post_sub_module_forward_function", "fwd")
    wrap("pre_sub_module_backward_function", "bwd")
    wrap("post_sub_module_backward_function", "bwd")

    dim = 64
    results = {}
    for n_params in args.params:
        class Block(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                for i in range(n_params):
                    setattr(self, f"w{i}", nn.Parameter(torch.randn(dim, dim) * 0.01))

            def forward(self, x):
                for i in range(n_params):
                    x = x + x @ getattr(self, f"w{i}")
                return x

        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.blocks = nn.ModuleList(Block() for _ in range(args.modules))

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return x.pow(2).mean()

        torch.manual_seed(0)
        net = Net()
        cfg = {"train_micro_batch_size_per_gpu": 1,
               "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0,
                                     "stage3_prefetch_bucket_size": 4 * n_params * dim * dim,
                                     "reduce_bucket_size": 10 ** 9},
               "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}}}
        engine, *_ = deepspeed.initialize(model=net, model_parameters=net.parameters(), config=cfg)
        coordinator = engine.optimizer.parameter_offload.get_param_coordinator()
        per_step = {"fwd": [], "bwd": [], "fwd_outer": [], "bwd_outer": []}
        plain = Net()
        plain_f, plain_b = [], []
        for step in range(args.steps):  # the same model without DeepSpeed's hooks: the compute to subtract
            x = torch.randn(8, dim)
            t0 = time.thread_time()
            ploss = plain(x)
            t1 = time.thread_time()
            ploss.backward()
            if step >= 2:
                plain_f.append(t1 - t0)
                plain_b.append(time.thread_time() - t1)
        plain_fwd, plain_bwd = statistics.median(plain_f), statistics.median(plain_b)
        prof = None
        for step in range(args.steps):
            if args.profile and rank == 0 and step == args.steps - 1:
                import cProfile
                prof = cProfile.Profile()
                prof.enable()
            for k in timers:
                timers[k] = [0.0, 0]
            x = torch.randn(8, dim)
            s0 = stub_s[0]
            t0 = time.thread_time()
            loss = engine(x)
            fwd_wall = time.thread_time() - t0 - (stub_s[0] - s0)
            t0 = time.thread_time()
            engine.backward(loss)
            bwd_wall = time.thread_time() - t0
            engine.step()
            if prof is not None:
                prof.disable()
                import pstats
                pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            if step >= 2 and coordinator.is_complete_trace():
                for k, (sec, count) in timers.items():
                    if count:
                        per_step[k].append(sec / count)
                per_step["fwd_outer"].append((fwd_wall - plain_fwd) / args.modules)
                per_step["bwd_outer"].append((bwd_wall - plain_bwd) / args.modules)
        results[n_params] = {k: statistics.median(v) for k, v in per_step.items() if v}
        engine.destroy()
    if rank == 0:
        out.put(results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=int, nargs="+", default=[1, 3, 8, 32], help="weights per module")
    ap.add_argument("--modules", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--port", type=int, default=29547)
    ap.add_argument("--profile", action="store_true", help="cProfile rank 0's last step (where the host time goes)")
    args = ap.parse_args()
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, 2, args, args.port, q)) for r in range(2)]
    for p in procs:
        p.start()
    res = q.get(timeout=900)
    for p in procs:
        p.join()
    print("params/module  fwd us/fetch (pre+post)  bwd us/fetch (pre+post)  fwd us/module, all hooks (wall - plain)"
          "  bwd us/module, all hooks + gradient hooks + reduce (wall - plain)")
    for n, r in sorted(res.items()):
        print(f"{n:13d}  {r.get('fwd', float('nan')) * 1e6:23.1f}  {r.get('bwd', float('nan')) * 1e6:23.1f}"
              f"  {r.get('fwd_outer', float('nan')) * 1e6:23.1f}  {r.get('bwd_outer', float('nan')) * 1e6:23.1f}")
    ns = sorted(res)
    if len(ns) >= 2:
        for k in ("fwd", "bwd", "fwd_outer", "bwd_outer"):
            xs, ys = ns, [res[n][k] * 1e6 for n in ns]
            mx, my = statistics.mean(xs), statistics.mean(ys)
            b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
            print(f"{k}: {my - b * mx:.1f} us per fetch + {b:.1f} us per parameter (least squares)")


if __name__ == "__main__":
    main()
