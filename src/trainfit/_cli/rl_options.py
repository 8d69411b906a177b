"""RL options (``--rl grpo|ppo|dpo`` and the rollout settings) and their ``memory`` output.

``add_rl_options(parser)`` adds the options to any command; ``rl_config_from_args(args)`` builds the
:class:`~trainfit.rl.RLConfig` (framework defaults fill what the user did not set);
``compute_rl_memory(args)`` is what ``trainfit memory --rl ...`` returns (the SFT memory dict of the policy
update plus an ``rl`` section); ``print_rl_memory(out)`` prints the per-phase table.
"""

from __future__ import annotations

import argparse
from typing import Any

from trainfit import inputs
from trainfit._cli.common import _arg, float_arg, int_arg
from trainfit.rl.config import ALGOS, ENGINES, FRAMEWORKS, RLConfig


def _seq(name: str):
    return _arg(lambda t: inputs.as_seq_len(name, t))

#: RLConfig fields set from options of the same name (None = not given on the command line).
_RL_OPTION_FIELDS = ("rollout_engine", "rollout_tp", "rollout_util", "prompt_len", "response_len",
                     "num_generations", "rollout_batch", "colocate", "ref", "critic", "engine_sleep",
                     "trainer_offload", "ref_offload")


def add_rl_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("RL fine-tuning (default: none = SFT)")
    g.add_argument("--rl", choices=ALGOS, default=None, help="grpo | ppo | dpo: size the RL phases (rollout, "
                   "train, weight sync) around the policy update")
    g.add_argument("--rl-framework", choices=FRAMEWORKS, default=None,
                   help="fill unset RL options with this framework's documented defaults")
    g.add_argument("--rollout-engine", choices=ENGINES, default=None, help="vllm | sglang (default vllm)")
    g.add_argument("--rollout-tp", type=int_arg("--rollout-tp", 1, 1024), default=None, help="tensor-parallel size of each rollout engine")
    g.add_argument("--rollout-util", type=float_arg("--rollout-util", 0, 1, lo_open=True), default=None, metavar="U",
                   help="engine gpu_memory_utilization / mem_fraction_static (0-1)")
    g.add_argument("--prompt-len", type=_seq("--prompt-len"), default=None, help="prompt tokens (max)")
    g.add_argument("--response-len", type=_seq("--response-len"), default=None, help="generated tokens (max)")
    g.add_argument("--num-generations", type=int_arg("--num-generations", 1, 65_536), default=None, help="responses per prompt")
    g.add_argument("--rollout-batch", type=int_arg("--rollout-batch", 1, 10_000_000), default=None, help="prompts per RL step")
    g.add_argument("--colocate", action=argparse.BooleanOptionalAction, default=None,
                   help="engine shares the training GPUs (default: the framework's, else yes)")
    g.add_argument("--ref", action=argparse.BooleanOptionalAction, default=None,
                   help="load a reference model (--no-ref: beta = 0)")
    g.add_argument("--critic", action=argparse.BooleanOptionalAction, default=None,
                   help="PPO critic / value model (default: on for ppo)")
    g.add_argument("--engine-sleep", action=argparse.BooleanOptionalAction, default=None,
                   help="engine releases weights + KV cache during the update (vLLM sleep level 1)")
    g.add_argument("--trainer-offload", action=argparse.BooleanOptionalAction, default=None,
                   help="trainer weights/optimizer to host RAM during rollout")
    g.add_argument("--ref-offload", action=argparse.BooleanOptionalAction, default=None,
                   help="reference weights in host RAM between its forward passes")
    g.add_argument("--steps", type=int_arg("--steps", 1, 10_000_000), default=None, help="RL steps, for hours (needs --gpu)")


def rl_config_from_args(args: argparse.Namespace) -> RLConfig | None:
    """The RLConfig of the command line, or None without ``--rl``."""
    algo = getattr(args, "rl", None)
    if not algo:
        return None
    user: dict[str, Any] = {f: getattr(args, f, None) for f in _RL_OPTION_FIELDS}
    user["algo"] = algo
    return RLConfig.for_framework(getattr(args, "rl_framework", None), **user)


def _gpu_from_args(args: argparse.Namespace) -> tuple[Any, str | None, float | None]:
    gpu, name, mem = None, None, None
    if getattr(args, "gpu", None):
        from trainfit.catalog.gpus import get_gpu
        from trainfit.errors import UnknownGPUError

        gpu = get_gpu(args.gpu)
        if gpu.mem_gib is None:
            raise UnknownGPUError(f"the catalog does not know the memory of {gpu.name}", fix="pass --gpu-mem GIB")
        name, mem = gpu.name, round(gpu.usable_mem_gib, 3)
    if getattr(args, "gpu_mem", None) is not None:
        mem = args.gpu_mem
    return gpu, name, mem


def compute_rl_memory(args: argparse.Namespace) -> dict:
    """``trainfit memory --rl ...``: the policy update's memory dict plus ``rl`` (per phase, KV pool,
    concurrent sequences, binding phase; with --gpu also speed and, with --steps, hours)."""
    from trainfit._cli.common import model_from_args, workload_from_args
    from trainfit.errors import WorkloadError
    from trainfit.rl.report import rl_report

    rl = rl_config_from_args(args)
    model = model_from_args(args)
    wl = workload_from_args(args, seq_len=rl.seq_len)
    gpu, gpu_name, mem = _gpu_from_args(args)
    if mem is None:
        raise WorkloadError("--rl needs the GPU: the rollout engine's budget is a fraction of its memory",
                            fix="pass --gpu NAME (e.g. H100) or --gpu-mem GIB")
    rep = rl_report(model, wl, rl, float(mem), gpu=gpu, steps=getattr(args, "steps", None),
                    host_ram_gib=getattr(args, "host_ram", None))
    out = rep.pop("_train").to_dict()
    out["workload"] = rep.pop("_workload").to_dict()
    out.update({"gpu": gpu_name, "gpu_mem_gib": mem, "verdict": rep["verdict"], "fits": rep["fits"],
                "fit": rep["fit"], "headroom_gib": round(rep["headroom_gib"], 2)})
    out["rl"] = rep
    return out


PHASE_LABELS = {"rollout": "rollout (engine + trainer residual)", "train": "train (policy update + ref/critic)",
                "sync": "weight sync (woken engine + bucket)"}


def print_rl_memory(out: dict) -> None:
    from trainfit._cli.tables import make_console
    from rich.table import Table

    c = make_console()
    rl = out["rl"]
    cfg = rl["config"]
    wl = out["workload"]
    title = (f"{out['model']}: {cfg['algo']} ({cfg['rl_framework'] or 'trainfit defaults'}), {wl['method']}, "
             f"prompt {cfg['prompt_len']} + response {cfg['response_len']}, {cfg['num_generations']} generations, "
             f"{cfg['rollout_engine']} tp {cfg['rollout_tp']} util {cfg['rollout_util']:g}, "
             f"{'colocated' if cfg['colocate'] else 'separate engine GPUs'}, {wl['gpus']} GPU(s) {wl['strategy']}")
    t = Table(title=title, title_justify="left")
    t.add_column("phase")
    t.add_column("GiB / GPU", justify="right")
    t.add_column("made of")
    for p, label in PHASE_LABELS.items():
        v = rl["phases_gib"][p]
        terms = ", ".join(f"{k} {x:.1f}" for k, x in rl["terms_gib"].get(p, {}).items() if x)
        mark = " [bold](binding)[/bold]" if p == rl["binding_phase"] else ""
        t.add_row(label + mark, f"{v:,.2f}", terms)
    c.print(t)
    if rl["kv_pool_gib"] is not None:
        c.print(f"KV pool {rl['kv_pool_gib']:.2f} GiB/GPU = {rl['max_concurrent_seqs']} concurrent sequences of "
                f"{cfg['prompt_len'] + cfg['response_len']} tokens ({rl['kv_bytes_per_token']:,} B/token/GPU"
                + (f" + {rl['kv_fixed_bytes_per_seq']:,} B/seq linear-attention state" if rl["kv_fixed_bytes_per_seq"]
                   else "") + f")   host RAM/node: {rl['host_ram_gib']:,.0f} GiB")
    name = out.get("gpu") or "GPU"
    colour = {"fits": "green", "tight": "yellow", "unknown": "yellow"}.get(rl["verdict"], "red")
    c.print(f"[{colour}]{rl['verdict']}[/{colour}] on {name} ({out['gpu_mem_gib']:g} GiB), binding phase "
            f"{rl['binding_phase']}: {rl['peak_gib']:.1f} GiB/GPU, headroom {rl['headroom_gib']:.2f} GiB")
    for reason in rl["fit"].get("reasons", []):
        c.print(f"  {reason}")
    if "speed" in rl:
        s = rl["speed"]
        c.print(f"step {s['step_seconds']:,.0f} s: rollout {s['rollout_seconds']:,.0f} s "
                f"({s['rollout_tokens_per_s']:,.0f} tok/s, {s['engines']} engine(s) x batch {s['decode_batch']}), "
                f"update {s['update_seconds']:,.0f} s, log-probs {s['logprob_seconds']:,.0f} s"
                + (f", critic {s['critic_seconds']:,.0f} s" if s["critic_seconds"] else "")
                + f", sync {s['sync_seconds']:,.1f} s")
    if "time" in rl:
        c.print(f"{rl['time']['steps']} steps: {rl['time']['hours']:,.1f} h, {rl['time']['gpu_hours']:,.1f} GPU-hours")
    for w in rl["warnings"]:
        c.print(f"[yellow]warning:[/yellow] {w}")
