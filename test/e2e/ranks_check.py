#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One plan, any number of processes: the losses are one process's bit for bit.

Each case compiles a plan over R ranks (ofc --devices RxD:cpu), trains it in one process and as
R processes (ofrun --launch-local, or the launchers' variables), and compares the metrics files
line by line. And the run controller: a rank killed mid-run, a rank with another plan, a rank that
never comes, a stray connection to the coordinator.

  ranks_check.py --bin BUILD/cli --work DIR CHECK       (CHECK: --list shows them)

Checks named mlp:* run every configuration as 2 processes over UCX shared memory and TCP;
cnn:* and lm:* one configuration as 4. `all-configs` runs every configuration of every model as
2 and 4 processes over both transports (minutes; not in CI).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

CONFIGS = {  # name: (ofc flags, micro-batches)
    "dp2": ("--devices 2x1:cpu --dp 2", 1),
    "tp2": ("--devices 2x1:cpu --tp 2", 1),
    "pp2": ("--devices 2x1:cpu --pp 2", 4),
    "dp2xtp2": ("--devices 2x2:cpu --dp 2 --tp 2", 1),
    "dp2xpp2": ("--devices 2x2:cpu --dp 2 --pp 2", 4),
    "dp4": ("--devices 4x1:cpu --dp 4", 1),
    "dp2xpp2-4ranks": ("--devices 4x1:cpu --dp 2 --pp 2", 4),
    "dp2xtp2-4ranks": ("--devices 4x1:cpu --dp 2 --tp 2", 1),
    # ZeRO 3: each rank holds half of every weight; the gathers cross ranks point to point.
    "dp2xtp2-zero3": ("--devices 2x2:cpu --dp 2 --tp 2 --zero 3", 1),
    # Data parallel over ranks of 2 devices: gradients are summed within each rank first, then
    # across (boxing_route's rank view), so the plan for one rank (one flat sum) agrees to rounding.
    "dp4-2x2": ("--devices 2x2:cpu --dp 4", 1),
    "dp8-2x4": ("--devices 2x4:cpu --dp 8", 1),
    "dp4-2x2-zero3": ("--devices 2x2:cpu --dp 4 --zero 3", 1),
    # ZeRO 1 with micro-batches: each step's gather of the updated shards into every replica
    # crosses ranks.
    "dp4-2x2-zero1": ("--devices 2x2:cpu --dp 4 --zero 1", 2),
    "tp4-2x2": ("--devices 2x2:cpu --tp 4", 1),
    # Four ranks: gradients are halved and doubled across ranks (boxing_route's tree route), pairwise.
    "dp8-4x2": ("--devices 4x2:cpu --dp 8", 1),
    # dp over four ranks, tp within each: gradients partial over both levels go as one all-reduce
    # over them (boxing_route's merged route), summed within each rank, then by the tree.
    "dp4xtp2-4x2": ("--devices 4x2:cpu --dp 4 --tp 2", 1),
}
# Configurations whose plan for one rank sums in another order: its losses agree within this
# relative tolerance, not bit for bit (the ranks still train to one process's bits).
ROUNDING = {c: 1e-5 for c in ("dp4", "dp4-2x2", "dp8-2x4", "dp4-2x2-zero3", "dp4-2x2-zero1", "tp4-2x2", "dp8-4x2", "dp4xtp2-4x2")}
STEPS = 6


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("check", nargs="?")
    p.add_argument("--list", action="store_true")
    return p.parse_args()


class Failure(Exception):
    pass


def run(cmd, env=None, timeout=120, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f]


class Case:
    def __init__(self, args, name):
        self.bin, self.work = args.bin, os.path.join(args.work, name.replace(":", "-"))
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)

    def tool(self, name):
        return os.path.join(self.bin, name)

    def path(self, name):
        return os.path.join(self.work, name)

    def data(self, model):
        """The --data spec and ofc flags of a model: random samples made here (numpy)."""
        import numpy as np
        rng = np.random.default_rng(0)
        here = os.path.dirname(os.path.abspath(__file__))
        fixtures = os.path.join(here, "..", "fixtures")
        if model == "lm":
            return os.path.join(fixtures, "lm.onnx"), f"tokens:{os.path.join(fixtures, 'lm_corpus.u16')},dtype=uint16"
        shape, onnx = {"mlp": ((784,), "mlp.onnx"), "cnn": ((3, 32, 32), "cnn.onnx")}[model]
        x, y = self.path("x.npy"), self.path("y.npy")
        np.save(x, rng.standard_normal((512,) + shape).astype(np.float32))
        np.save(y, rng.integers(0, 10, (512,)).astype(np.int64))
        return os.path.join(fixtures, onnx), f"npy:{x},{y}"

    def compile(self, onnx, flags, k, name="p.ofp"):
        plan = self.path(name)
        rc, out, err = run([self.tool("ofc"), onnx, "-o", plan, "--train", "--loss", "cross_entropy", "--optimizer",
                            "sgd:lr=0.05,momentum=0.9", "--micro-batches", str(k), *flags.split()])
        if rc != 0:
            raise Failure(f"ofc {flags}: {err.strip()}")
        return plan

    def train(self, plan, data, metrics, extra=(), env=None, timeout=120):
        rc, out, err = run([self.tool("ofrun"), plan, "--data", data, "--steps", str(STEPS), "--no-shuffle", "--metrics", metrics,
                            "--stall-timeout", "30", *extra], env=env, timeout=timeout)
        if rc != 0:
            raise Failure(f"ofrun {' '.join(extra)} (env {env}): exit {rc}:\n{out}{err}")
        return out + err


def same_losses(case, plan, data, launch_envs, one_rank_plan=None, one_rank_rtol=None):
    one = case.path("one.jsonl")
    case.train(plan, data, one)
    want = losses(one)
    if len(want) != STEPS:
        raise Failure(f"one process logged {len(want)} steps, not {STEPS}")
    if one_rank_plan:
        # Ranks change where each batch is read (every rank's source reads its own rows), not what
        # any device computes: the plan compiled for one rank trains to the same bits.
        flat = case.path("one-rank.jsonl")
        case.train(one_rank_plan, data, flat)
        if one_rank_rtol is None:
            if losses(flat) != want:
                raise Failure(f"the plan of one rank trains otherwise:\n  ranks:    {want}\n  one rank: {losses(flat)}")
            print(f"ranks: {len(want)} steps, losses identical to the same plan compiled for one rank")
        else:
            worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(want, losses(flat)))
            if len(losses(flat)) != len(want) or worst > one_rank_rtol:
                raise Failure(f"the plan of one rank trains otherwise (rtol {one_rank_rtol}):\n  ranks:    {want}\n  one rank: {losses(flat)}")
            print(f"ranks: {len(want)} steps, losses within {worst:.1e} of the plan compiled for one rank (another sum order)")
    for label, extra, env in launch_envs:
        got_path = case.path(f"{label}.jsonl")
        if os.path.exists(got_path):
            os.remove(got_path)
        log = case.train(plan, data, got_path, extra, env)
        got = losses(got_path)
        if got != want:
            raise Failure(f"{label}: losses differ from one process:\n  one:  {want}\n  {label}: {got}\n{log}")
        print(f"ranks {label}: {len(got)} steps, losses identical to one process (last {got[-1]:.6f})")


def check_config(args, model, config, transports=("sm", "tcp")):
    case = Case(args, f"{model}-{config}")
    onnx, data = case.data(model)
    flags, k = CONFIGS[config]
    plan = case.compile(onnx, flags, k)
    ranks, per_rank = flags.split("--devices ")[1].split(":")[0].split("x")
    one_rank = case.compile(onnx, flags.replace(f"{ranks}x{per_rank}:cpu", f"{int(ranks) * int(per_rank)}:cpu"), k, name="one-rank.ofp")
    same_losses(case, plan, data, [(f"{config}-{t}", ["--launch-local"], {"UCX_TLS": t}) for t in transports], one_rank,
                ROUNDING.get(config))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_ranks(case, plans, data, env_of, extra=()):
    """Starts rank r of len(plans) with plans[r] and the environment env_of(r)."""
    procs = []
    for r, plan in enumerate(plans):
        e = dict(os.environ)
        e.update(env_of(r))
        procs.append(subprocess.Popen([case.tool("ofrun"), plan, "--data", data, "--steps", str(STEPS), "--no-shuffle",
                                       "--metrics", case.path(f"rank{r}.jsonl"), *extra],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e))
    return procs


def check_launcher_vars(args, which):
    """Two processes started as a launcher starts them: only its variables say who is who."""
    case = Case(args, f"vars-{which}")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp2"][0], 1)
    one = case.path("one.jsonl")
    case.train(plan, data, one)
    port = free_port()
    token = {"OF_JOB_TOKEN": "vars-test"}
    envs = {
        "slurm": lambda r: {**token, "SLURM_PROCID": str(r), "SLURM_NTASKS": "2", "OF_COORDINATOR": f"127.0.0.1:{port}"},
        "pmi": lambda r: {**token, "PMI_RANK": str(r), "PMI_SIZE": "2", "OF_COORDINATOR": f"127.0.0.1:{port}"},
        "torchrun": lambda r: {**token, "RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)},
        "flags": lambda r: token,
    }[which]
    extra = ("--coordinator", f"127.0.0.1:{port}") if which == "flags" else ()
    plans = [plan, plan]
    procs = spawn_ranks(case, plans, data, envs, extra) if which != "flags" else [
        subprocess.Popen([case.tool("ofrun"), plan, "--data", data, "--steps", str(STEPS), "--no-shuffle", "--metrics",
                          case.path(f"rank{r}.jsonl"), "--rank", str(r), "--world", "2", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **token})
        for r in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode != 0:
            raise Failure(f"{which}: rank {r} exited {p.returncode}:\n{out}{err}")
    if losses(case.path("rank0.jsonl")) != losses(one):
        raise Failure(f"{which}: rank 0's losses differ from one process")
    if os.path.exists(case.path("rank1.jsonl")):
        raise Failure(f"{which}: rank 1 (no sink) wrote a metrics file")
    print(f"ranks vars-{which}: 2 processes from {which}'s variables, losses identical to one process")


def check_mpirun(args):
    """Two ranks started by Debian's Open MPI: rank and world from OMPI_COMM_WORLD_RANK/SIZE."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        raise Failure("cannot run: no mpirun (scripts/setup.sh installs openmpi-bin)")
    case = Case(args, "mpirun")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, *CONFIGS["dp2xpp2"])
    one = case.path("one.jsonl")
    case.train(plan, data, one)
    got = case.path("mpi.jsonl")
    rc, out, err = run([mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "2", "-x", "OF_JOB_TOKEN=mpi", case.tool("ofrun"), plan,
                        "--data", data, "--steps", str(STEPS), "--no-shuffle", "--metrics", got], timeout=180)
    if rc != 0:
        raise Failure(f"mpirun exited {rc}:\n{out}{err}")
    if losses(got) != losses(one):
        raise Failure(f"mpirun's losses differ from one process:\n  one: {losses(one)}\n  mpi: {losses(got)}")
    print(f"ranks mpirun: 2 ranks under mpirun, losses identical to one process")


def train_then_resume(case, plan, data, metrics, ck):
    """As processes of every rank: half of STEPS with checkpoint folder ck, then resumed to the end."""
    global STEPS
    steps = STEPS
    try:
        STEPS = steps // 2
        case.train(plan, data, metrics, ["--launch-local", "--checkpoint", ck])
    finally:
        STEPS = steps
    case.train(plan, data, metrics, ["--launch-local", "--checkpoint", ck, "--resume"])


def check_checkpoint(args):
    """Checkpoints of a multi-process run are one process's byte for byte; --resume continues
    with the losses of an uninterrupted run; and a dp=2 checkpoint resumes on a tp=2 plan."""
    case = Case(args, "checkpoint")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp2xtp2"][0], 1, "p.ofp")
    one, ck_one, ck_ranks, m = case.path("one.jsonl"), case.path("ck-one"), case.path("ck-ranks"), case.path("ranks.jsonl")
    case.train(plan, data, one, ["--checkpoint", ck_one])
    global STEPS
    steps = STEPS
    train_then_resume(case, plan, data, m, ck_ranks)
    if losses(m) != losses(one):
        raise Failure(f"resumed multi-process losses differ from one uninterrupted process:\n  {losses(one)}\n  {losses(m)}")
    last = f"step-{steps:08d}"
    for f in ("model.safetensors", "optimizer.safetensors"):
        with open(os.path.join(ck_one, last, f), "rb") as a, open(os.path.join(ck_ranks, last, f), "rb") as b:
            if a.read() != b.read():
                raise Failure(f"{last}/{f} differs from one process's")
    # A dp=2 checkpoint (of 2 ranks) continues on a tp=2 plan of 2 ranks.
    dp, tp = case.compile(onnx, CONFIGS["dp2"][0], 1, "dp.ofp"), case.compile(onnx, CONFIGS["tp2"][0], 1, "tp.ofp")
    ck = case.path("ck-dp")
    mixed, want = case.path("mixed.jsonl"), case.path("want.jsonl")
    try:
        STEPS = steps // 2
        case.train(dp, data, mixed, ["--launch-local", "--checkpoint", ck])
    finally:
        STEPS = steps
    case.train(tp, data, mixed, ["--launch-local", "--checkpoint", ck, "--resume"])
    case.train(dp, data, want)
    a, b = losses(want), losses(mixed)
    if len(a) != len(b) or any(abs(x - y) > 1e-5 * abs(y) for x, y in zip(a, b)):
        raise Failure(f"a dp=2 checkpoint resumed on tp=2 does not continue the run:\n  {a}\n  {b}")
    print(f"ranks checkpoint: multi-process checkpoints equal one process's; resume continues bit for bit; dp=2 -> tp=2 "
          f"within {max(abs(x - y) / abs(y) for x, y in zip(a, b)):.2g}")


def check_sharded_checkpoint(args):
    """Plans of 2 ranks checkpoint in 2 shards, each rank writing what it holds, and no weight
    crosses ranks every step for it: a pipeline's ranks their stages, and a tensor split over
    ranks (tp=2) is written whole by rank 0 from the boxes rank 1 hands it at each save. The files
    are those of the same plan in one process byte for byte, the tensors those of the plan
    compiled for one rank bit for bit, PyTorch loads them through the index with
    load_state_dict(strict=True), a resumed run continues bit for bit, and the checkpoint resumes
    on another plan (dp=2)."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_load_checkpoint import model_for, read_checkpoint
    global STEPS
    steps = STEPS
    case = Case(args, "sharded-checkpoint")
    onnx, data = case.data("mlp")
    want = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json",
            "optimizer-00001-of-00002.safetensors", "optimizer-00002-of-00002.safetensors",
            "optimizer.safetensors.index.json", "state.json"]
    last = f"step-{steps:08d}"
    for config in ("pp2", "tp2"):
        flags, k = CONFIGS[config]
        plan = case.compile(onnx, flags, k, f"{config}.ofp")
        flat = case.compile(onnx, flags.replace("2x1:cpu", "2:cpu"), k, f"{config}-one-rank.ofp")
        ck_one, ck_ranks, ck_flat = (case.path(f"{config}-{n}") for n in ("ck-one", "ck-ranks", "ck-flat"))
        one, m = case.path(f"{config}-one.jsonl"), case.path(f"{config}-ranks.jsonl")
        case.train(plan, data, one, ["--checkpoint", ck_one])
        case.train(flat, data, case.path(f"{config}-flat.jsonl"), ["--checkpoint", ck_flat])
        train_then_resume(case, plan, data, m, ck_ranks)
        if losses(m) != losses(one):
            raise Failure(f"{config}: resumed sharded losses differ from one uninterrupted process:\n  {losses(one)}\n  {losses(m)}")
        files = sorted(os.listdir(os.path.join(ck_ranks, last)))
        if files != want:
            raise Failure(f"{config}: {last} holds {files}, expected {want}")
        for f in files:
            with open(os.path.join(ck_one, last, f), "rb") as a, open(os.path.join(ck_ranks, last, f), "rb") as b:
                if a.read() != b.read():
                    raise Failure(f"{config}: {last}/{f} differs from one process's")
        for kind in ("model", "optimizer"):
            sharded, _ = read_checkpoint(os.path.join(ck_ranks, last, f"{kind}.safetensors.index.json"))
            whole, _ = read_checkpoint(os.path.join(ck_flat, last, f"{kind}.safetensors"))
            if sorted(sharded) != sorted(whole) or any(not torch.equal(sharded[n], whole[n]) for n in whole):
                raise Failure(f"{config}: the sharded {kind} tensors differ from the one-rank plan's single file")
        model = model_for(onnx)
        model.load_state_dict(read_checkpoint(os.path.join(ck_ranks, last, "model.safetensors.index.json"))[0], strict=True)
        print(f"ranks sharded-checkpoint {config}: 2 shards, files equal one process's, tensors the one-rank plan's; "
              f"torch loads them (strict); resume bit for bit")
    # The pipeline's sharded checkpoint continues on a data-parallel plan of 2 ranks.
    flags, k = CONFIGS["pp2"]
    dp = case.compile(onnx, CONFIGS["dp2"][0], k, "dp.ofp")
    mixed = case.path("mixed.jsonl")
    shutil.copytree(case.path("pp2-ck-ranks"), case.path("ck-mixed"))
    try:
        STEPS = steps + 2
        case.train(dp, data, mixed, ["--launch-local", "--checkpoint", case.path("ck-mixed"), "--resume"])
        case.train(case.path("pp2.ofp"), data, case.path("longer.jsonl"))
    finally:
        STEPS = steps
    a, b = losses(case.path("longer.jsonl"))[steps:], losses(mixed)
    if len(a) != 2 or len(b) != 2 or any(abs(x - y) > 1e-5 * abs(y) for x, y in zip(a, b)):
        raise Failure(f"a sharded pp=2 checkpoint resumed on dp=2 does not continue the run:\n  {a}\n  {b}")
    print(f"ranks sharded-checkpoint: pp=2 -> dp=2 within {max(abs(x - y) / abs(y) for x, y in zip(a, b)):.2g}")


VETH_SCRIPT = r"""
set -e
# UCX finds network devices in /sys/class/net: each namespace mounts its own sysfs.
mount -t sysfs sysfs /sys
ip link set lo up
unshare -nm sh -c 'mount -t sysfs sysfs /sys && exec sleep 120' &
child=$!
sleep 0.3
ip link add veth0 type veth peer name veth1
ip link set veth1 netns $child
ip addr add 10.77.0.1/24 dev veth0
ip link set veth0 up
sleep 0.3
nsenter -t $child -n ip link set lo up
nsenter -t $child -n ip addr add 10.77.0.2/24 dev veth1
nsenter -t $child -n ip link set veth1 up
export OF_JOB_TOKEN=veth UCX_TLS=tcp
UCX_NET_DEVICES=veth0 "$OFRUN" "$PLAN" --data "$DATA" --steps "$STEPS" --no-shuffle --metrics "$METRICS" \
  --rank 0 --world 2 --coordinator 10.77.0.1:29577 --bootstrap-timeout 30 &
rank0=$!
UCX_NET_DEVICES=veth1 nsenter -t $child -n -m "$OFRUN" "$PLAN" --data "$DATA" --steps "$STEPS" --no-shuffle \
  --rank 1 --world 2 --coordinator 10.77.0.1:29577 --bootstrap-timeout 30
wait $rank0
kill $child
"""


def check_veth(args):
    """Two ranks in two network namespaces joined by a veth pair (unshare -Urn: no root needed):
    TCP crosses a real, if virtual, link."""
    for tool in ("unshare", "nsenter", "ip"):
        if not shutil.which(tool):
            raise Failure(f"cannot run: no {tool} (util-linux, iproute2)")
    case = Case(args, "veth")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp2xpp2"][0], CONFIGS["dp2xpp2"][1])
    one, got = case.path("one.jsonl"), case.path("veth.jsonl")
    case.train(plan, data, one)
    env = {"OFRUN": case.tool("ofrun"), "PLAN": plan, "DATA": data, "STEPS": str(STEPS), "METRICS": got}
    rc, out, err = run(["unshare", "-Urnm", "bash", "-c", VETH_SCRIPT], env=env, timeout=180)
    if rc != 0:
        raise Failure(f"the two namespaces' run exited {rc}:\n{out}{err}")
    if losses(got) != losses(one):
        raise Failure(f"losses over the veth link differ from one process:\n  {losses(one)}\n  {losses(got)}")
    print("ranks veth: rank 0 and rank 1 in two network namespaces over a veth pair (UCX tcp), losses identical to one process")


def check_kill(args):
    """SIGKILL of one rank mid-run: the other exits non-zero within 10 s, naming it."""
    case = Case(args, "kill")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp2"][0], 1)
    port = free_port()
    procs = [subprocess.Popen([case.tool("ofrun"), plan, "--data", data, "--steps", "100000", "--log-every", "0",
                               "--rank", str(r), "--world", "2", "--coordinator", f"127.0.0.1:{port}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OF_JOB_TOKEN": "k"})
             for r in range(2)]
    time.sleep(2.0)  # well into the run
    if any(p.poll() is not None for p in procs):
        raise Failure("a rank ended before it was killed: " + "".join(p.communicate()[1] for p in procs))
    procs[1].send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    try:
        out, err = procs[0].communicate(timeout=10)
    except subprocess.TimeoutExpired:
        procs[0].kill()
        raise Failure("rank 0 did not stop within 10 s of rank 1's death")
    took = time.monotonic() - killed_at
    procs[1].communicate()
    if procs[0].returncode == 0 or "rank 1" not in err:
        raise Failure(f"rank 0 exited {procs[0].returncode} after rank 1's death, saying:\n{err}")
    line = [l for l in err.splitlines() if "error" in l]
    print(f"ranks kill: rank 0 exited {procs[0].returncode} {took:.2f} s after rank 1 was killed: {line[0] if line else err.strip()}")


def check_kill_saving(args):
    """SIGKILL of either rank of a pipeline that checkpoints in shards every step: the other exits
    non-zero within 10 s naming it (also while it waits for the dead rank's shard), and the
    checkpoint `latest` names is whole: a run resumes from it."""
    case = Case(args, "kill-saving")
    onnx, data = case.data("mlp")
    flags, k = CONFIGS["pp2"]
    plan = case.compile(onnx, flags, k)
    for victim in (1, 0):
        ck = case.path(f"ck-{victim}")
        port = free_port()
        procs = [subprocess.Popen([case.tool("ofrun"), plan, "--data", data, "--steps", "100000", "--log-every", "0", "--checkpoint", ck,
                                   "--checkpoint-every", "1", "--rank", str(r), "--world", "2", "--coordinator", f"127.0.0.1:{port}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OF_JOB_TOKEN": "ks"})
                 for r in range(2)]
        time.sleep(2.5)  # well into the run: a save is in flight nearly all the time
        if any(p.poll() is not None for p in procs):
            raise Failure("a rank ended before it was killed: " + "".join(p.communicate()[1] for p in procs))
        procs[victim].send_signal(signal.SIGKILL)
        survivor = procs[1 - victim]
        try:
            out, err = survivor.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            survivor.kill()
            raise Failure(f"rank {1 - victim} did not stop within 10 s of rank {victim}'s death")
        procs[victim].communicate()
        if survivor.returncode == 0 or f"rank {victim}" not in err:
            raise Failure(f"rank {1 - victim} exited {survivor.returncode} after rank {victim}'s death, saying:\n{err}")
        with open(os.path.join(ck, "latest")) as f:
            step = int(f.read().strip().split("-")[1])
        if step < 1:
            raise Failure(f"no checkpoint was committed before the kill ({ck})")
        resumed, straight = case.path(f"resumed-{victim}.jsonl"), case.path(f"straight-{victim}.jsonl")
        rc, out, err = run([case.tool("ofrun"), plan, "--data", data, "--steps", str(step + 2), "--checkpoint", ck, "--resume",
                            "--metrics", resumed])
        if rc != 0:
            raise Failure(f"after rank {victim} was killed, the checkpoint of step {step} does not resume:\n{err}")
        rc, out, err = run([case.tool("ofrun"), plan, "--data", data, "--steps", str(step + 2), "--metrics", straight])
        if rc != 0 or losses(straight)[step:] != losses(resumed):
            raise Failure(f"resumed after the kill, steps {step + 1}-{step + 2} differ from an uninterrupted run:\n"
                          f"  {losses(resumed)}\n  {losses(straight)[step:]}\n{err}")
        print(f"ranks kill-saving: rank {victim} killed; rank {1 - victim} stopped naming it; step {step}'s sharded checkpoint "
              f"resumes with the losses of an uninterrupted run")


def check_other_plan(args):
    """A rank started with another plan is refused at bootstrap, and both say which."""
    case = Case(args, "other-plan")
    onnx, data = case.data("mlp")
    a = case.compile(onnx, CONFIGS["dp2"][0], 1, "a.ofp")
    b = case.compile(onnx, CONFIGS["dp2"][0] + " --slots 3", 1, "b.ofp")  # the same model, another plan
    port = free_port()
    procs = spawn_ranks(case, [a, b], data, lambda r: {"OF_JOB_TOKEN": "p", "RANK": str(r), "WORLD_SIZE": "2",
                                                      "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    outs = [p.communicate(timeout=60) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        if p.returncode == 0 or "rank 1 runs another plan" not in err:
            raise Failure(f"rank {r} exited {p.returncode} saying:\n{err}")
    print(f"ranks other-plan: both refused: {outs[0][1].strip().splitlines()[-1]}")


def check_missing_rank(args):
    """A rank that never starts: rank 0 gives up after the bootstrap timeout, naming it."""
    case = Case(args, "missing")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp4"][0], 1)
    port = free_port()
    start = time.monotonic()
    procs = [subprocess.Popen([case.tool("ofrun"), plan, "--data", data, "--steps", "2", "--rank", str(r), "--world", "4",
                               "--coordinator", f"127.0.0.1:{port}", "--bootstrap-timeout", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OF_JOB_TOKEN": "m"})
             for r in (0, 1, 3)]
    outs = [p.communicate(timeout=30) for p in procs]
    took = time.monotonic() - start
    for p, (out, err) in zip(procs, outs):
        if p.returncode == 0 or "rank 2 did not join" not in err:
            raise Failure(f"a rank exited {p.returncode} saying:\n{err}")
    print(f"ranks missing: ranks 0, 1 and 3 gave up after {took:.1f} s: {outs[0][1].strip()}")


def check_bad_data(args):
    """Every rank reads its own data: a rank that cannot open its data file fails before it joins,
    and the job stops at once naming it and the file (not after the bootstrap timeout), whether
    the failing rank is another rank (it tells rank 0) or rank 0 (it answers the others)."""
    case = Case(args, "bad-data")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp2"][0], 1)
    missing = case.path("missing.npy")
    for bad in (1, 0):
        port = free_port()
        start = time.monotonic()
        procs = [subprocess.Popen([case.tool("ofrun"), plan, "--data", f"npy:{missing},{missing}" if r == bad else data, "--steps", "2",
                                   "--rank", str(r), "--world", "2", "--coordinator", f"127.0.0.1:{port}", "--bootstrap-timeout", "60"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OF_JOB_TOKEN": "b"})
                 for r in (0, 1)]
        outs = [p.communicate(timeout=90) for p in procs]
        took = time.monotonic() - start
        for r, (p, (out, err)) in enumerate(zip(procs, outs)):
            said = f"rank {bad} failed before it joined" if r != bad else "missing.npy"
            if p.returncode == 0 or said not in err or "missing.npy" not in err:
                raise Failure(f"rank {bad} without its data: rank {r} exited {p.returncode} saying:\n{err}")
        if took > 10:
            raise Failure(f"rank {bad} without its data: the ranks took {took:.1f} s to stop (the bootstrap timeout is 60 s)")
        other = outs[1 - bad][1].strip().splitlines()[-1]
        print(f"ranks bad-data: rank {bad} without its data, both stopped in {took:.1f} s; rank {1 - bad}: {other}")


def check_stray(args):
    """A stray connection to the coordinator is refused in one line; the job goes on."""
    case = Case(args, "stray")
    onnx, data = case.data("mlp")
    plan = case.compile(onnx, CONFIGS["dp2"][0], 1)
    one = case.path("one.jsonl")
    case.train(plan, data, one)
    port = free_port()
    env = lambda r: {"OF_JOB_TOKEN": "s", "RANK": str(r), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    rank0 = spawn_ranks(case, [plan], data, env)[0]
    stray = None
    for _ in range(100):  # until rank 0 listens
        try:
            stray = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    if stray is None:
        raise Failure("rank 0 never listened")
    stray.sendall(b"GET / HTTP/1.0\r\n\r\n")
    e = dict(os.environ)
    e.update(env(1))
    rank1 = subprocess.Popen([case.tool("ofrun"), plan, "--data", data, "--steps", str(STEPS), "--no-shuffle", "--metrics",
                              case.path("rank1.jsonl")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    out0, err0 = rank0.communicate(timeout=60)
    rank1.communicate(timeout=60)
    stray.close()
    if rank0.returncode != 0 or rank1.returncode != 0:
        raise Failure(f"the job failed after a stray connection: {err0}")
    refused = [l for l in err0.splitlines() if "refused a connection" in l]
    if len(refused) != 1:
        raise Failure(f"rank 0 did not say once that it refused the stray connection:\n{err0}")
    if losses(case.path("rank0.jsonl")) != losses(one):
        raise Failure("losses differ from one process after a stray connection")
    print(f"ranks stray: {refused[0]}; the job trained on")


def check_infer(args):
    """Inference plans as one process per rank: the outputs of one process, bit for bit, for
    every configuration of the MLP over shared memory and TCP (the source's rank reads the
    inputs, the sink's writes the outputs)."""
    import numpy as np
    case = Case(args, "infer")
    x = case.path("x.npy")
    np.save(x, np.random.default_rng(1).standard_normal((64, 784)).astype(np.float32))
    onnx = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "mlp.onnx")
    for config in ("dp2", "tp2", "pp2", "dp2xtp2", "dp2xpp2", "dp2xtp2-4ranks"):
        plan = case.path(f"{config}.ofp")
        rc, out, err = run([case.tool("ofc"), onnx, "-o", plan, *CONFIGS[config][0].split()])
        if rc != 0:
            raise Failure(f"ofc {config}: {err.strip()}")
        outputs = {}
        for label, extra, env in [("one", [], {})] + [(t, ["--launch-local"], {"UCX_TLS": t}) for t in ("sm", "tcp")]:
            y = case.path(f"{config}-{label}.npy")
            rc, out, err = run([case.tool("ofrun"), plan, "--input", f"input={x}", "--output", f"logits={y}", "--pieces", "8",
                                "--stall-timeout", "30", *extra], env=env)
            if rc != 0:
                raise Failure(f"inference {config} {label}: exit {rc}:\n{out}{err}")
            outputs[label] = np.load(y)
        for t in ("sm", "tcp"):
            if not np.array_equal(outputs["one"], outputs[t]):
                raise Failure(f"inference {config} over {t}: outputs differ from one process's")
        print(f"ranks infer {config}: {outputs['one'].shape[0]} rows over sm and tcp identical to one process")


CHECKS = {f"mlp:{c}": (lambda c: lambda a: check_config(a, "mlp", c))(c) for c in ["dp2", "tp2", "pp2", "dp2xtp2", "dp2xtp2-zero3", "dp2xpp2"]}
CHECKS.update({
    "cnn:dp2xpp2-4ranks": lambda a: check_config(a, "cnn", "dp2xpp2-4ranks"),
    "lm:dp2xtp2-4ranks": lambda a: check_config(a, "lm", "dp2xtp2-4ranks"),
    "mlp:dp4": lambda a: check_config(a, "mlp", "dp4"),
    "mlp:dp8-4x2": lambda a: check_config(a, "mlp", "dp8-4x2"),
    "lm:dp4xtp2-4x2": lambda a: check_config(a, "lm", "dp4xtp2-4x2"),
    "mlp:dp4-2x2": lambda a: check_config(a, "mlp", "dp4-2x2"),
    "cnn:dp4-2x2": lambda a: check_config(a, "cnn", "dp4-2x2"),
    "cnn:dp8-2x4": lambda a: check_config(a, "cnn", "dp8-2x4"),
    "mlp:dp4-2x2-zero3": lambda a: check_config(a, "mlp", "dp4-2x2-zero3"),
    "mlp:dp4-2x2-zero1": lambda a: check_config(a, "mlp", "dp4-2x2-zero1"),
    "lm:tp4-2x2": lambda a: check_config(a, "lm", "tp4-2x2"),
    "vars:slurm": lambda a: check_launcher_vars(a, "slurm"),
    "vars:pmi": lambda a: check_launcher_vars(a, "pmi"),
    "vars:torchrun": lambda a: check_launcher_vars(a, "torchrun"),
    "vars:flags": lambda a: check_launcher_vars(a, "flags"),
    "mpirun": check_mpirun,
    "veth": check_veth,
    "checkpoint": check_checkpoint,
    "sharded-checkpoint": check_sharded_checkpoint,
    "kill": check_kill,
    "kill-saving": check_kill_saving,
    "other-plan": check_other_plan,
    "missing-rank": check_missing_rank,
    "bad-data": check_bad_data,
    "stray": check_stray,
    "infer": check_infer,
    "all-configs": lambda a: [check_config(a, m, c) for m in ("mlp", "cnn", "lm") for c in CONFIGS],
})


def main():
    args = parse()
    if args.list:
        print("\n".join(CHECKS))
        return 0
    if args.check not in CHECKS:
        print(f"ranks_check: unknown check {args.check!r} (--list shows them)", file=sys.stderr)
        return 2
    args.bin, args.work = os.path.abspath(args.bin), os.path.abspath(args.work)
    try:
        CHECKS[args.check](args)
    except Failure as e:
        print(f"ranks {args.check}: FAIL: {e}")
        return 1
    except subprocess.TimeoutExpired as e:
        print(f"ranks {args.check}: FAIL: timed out: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
