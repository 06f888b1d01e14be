"""convert --distributed: a single-device CUDA training script made multi-device, run under torchrun here."""
import ast
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT, run_program

from torchport.api import convert
from torchport.backends import load_target
from torchport.converter.multicard import Refusal, line_map, plan

FIXTURE = ROOT / "tests" / "fixtures" / "distributed"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1",
           PYTHON=sys.executable)
ENV.pop("TORCHPORT_TARGET", None)


def torchport(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "torchport", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=ENV, timeout=120)


def losses(stdout: str) -> list:
    return [float(line.rsplit(" ", 1)[1]) for line in stdout.splitlines() if " loss " in line]


@pytest.mark.distributed
@pytest.mark.subprocess
@pytest.mark.torch
def test_converted_script_trains_on_two_processes_like_a_hand_written_ddp_run(tmp_path):
    src = tmp_path / "proj"
    shutil.copytree(FIXTURE, src)
    p = torchport("convert", src, "--to", "cpu", "-o", tmp_path / "out", "--distributed", "--main", "mnist_cuda.py")
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    launcher = out / "run_distributed.sh"
    assert launcher.is_file() and os.access(launcher, os.X_OK)
    log = tmp_path / "shard"
    run = run_program(["bash", str(launcher), "-n", "2", "--save", str(tmp_path / "a.pt")], capture_output=True,
                      text=True, env=dict(ENV, SHARD_LOG=str(log)), timeout=300, cwd=tmp_path,
                      before_retry=lambda: [f.unlink() for f in tmp_path.glob("shard.*")])
    assert run.returncode == 0, run.stderr[-3000:]
    ref = run_program([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                       "mnist_ddp_reference.py", "--save", str(tmp_path / "b.pt")], capture_output=True, text=True,
                      env=ENV, timeout=300, cwd=src)
    assert ref.returncode == 0, ref.stderr[-3000:]

    # rank 0 alone prints: 2 epochs x 6 batches (96 samples / 2 ranks / batch 8), one test line per epoch
    mine, theirs = losses(run.stdout), losses(ref.stdout)
    assert len(mine) == 12 and mine == pytest.approx(theirs, rel=1e-6, abs=1e-7)
    assert run.stdout.count("test accuracy") == 2

    # two processes, each read its own half of the training set in every epoch
    logs = sorted(tmp_path.glob("shard.*"))
    assert len(logs) == 2
    train_reads = [[int(line.split()[1]) for line in f.read_text().splitlines() if line.startswith("train")]
                   for f in logs]
    for epoch in range(2):
        a, b = (set(reads[epoch * 48:(epoch + 1) * 48]) for reads in train_reads)
        assert len(a) == len(b) == 48 and not a & b and a | b == set(range(96)), f"epoch {epoch + 1}"
    assert train_reads[0][:48] != train_reads[0][48:], "set_epoch gives every epoch its own shuffle"

    import torch
    mine, theirs = torch.load(tmp_path / "a.pt"), torch.load(tmp_path / "b.pt")
    assert list(mine) == list(theirs), "the checkpoint keeps the single-device layout (no module. prefix)"
    assert all(torch.allclose(mine[k], theirs[k], atol=1e-6) for k in mine)


def test_what_the_converted_script_says(tmp_path):
    out = tmp_path / "out"
    result = convert(FIXTURE, "cpu", out, distributed=True, main="mnist_cuda.py")
    text = (out / "mnist_cuda.py").read_text()
    ast.parse(text)
    for expected in ('dist.init_process_group(backend="gloo")', "torch.cpu.set_device(LOCAL_RANK)",
                     "train_sampler = torch.utils.data.distributed.DistributedSampler(Digits(96, \"train\"), "
                     "shuffle=True)",
                     "DataLoader(train_sampler.dataset, batch_size=args.batch_size, sampler=train_sampler)",
                     "model = torch.nn.parallel.DistributedDataParallel(model)\n    for epoch in range(1, args.epochs",
                     "        train_sampler.set_epoch(epoch)\n        train(args, model,",
                     "if RANK == 0:\n            torch.save(model.module.state_dict(), args.save)",
                     'device = torch.device("cpu")'):
        assert expected in text, expected
    assert "DataLoader(Digits(32, \"test\"), batch_size=16)" in text, "the test loader is not sharded"
    assert (out / "mnist_ddp_reference.py").read_bytes() == (FIXTURE / "mnist_ddp_reference.py").read_bytes()
    # findings point at the original lines
    original = (FIXTURE / "mnist_cuda.py").read_text().splitlines()
    by_rule = {}
    for f in result.findings:
        by_rule.setdefault(f.rule, []).append(f)
    assert {"TP961", "TP962", "TP963", "TP964", "TP965", "TP966"} <= set(by_rule)
    wrap = next(f for f in by_rule["TP963"] if f.action == "insert")
    assert original[wrap.line - 1].strip().startswith("for epoch in range")
    device = next(f for f in by_rule["TP965"])
    assert '"cuda:0"' in original[device.line - 1]
    backend = next(f for f in result.findings if f.rule == "TP301")
    assert original[backend.line - 1].strip() == "def main():" or backend.line <= len(original)
    # a normal conversion of the result changes nothing more; a second --distributed is refused
    again = convert(out, "cpu", tmp_path / "again")
    assert (tmp_path / "again" / "mnist_cuda.py").read_text() == text and again.summary()["changes"] == 0
    with pytest.raises(Refusal, match="already distributed"):
        convert(out, "cpu", tmp_path / "third", distributed=True, main="mnist_cuda.py")


@pytest.mark.subprocess
@pytest.mark.parametrize("target,expect", [
    ("npu", ['import torch_npu', 'backend="hccl"', "torch.npu.set_device(LOCAL_RANK)", "data.npu()"]),
    ("musa", ['import torch_musa', 'backend="mccl"', "torch.musa.set_device(LOCAL_RANK)"]),
    ("accelerator", ["torch.accelerator.set_device_index(LOCAL_RANK)", "get_default_backend_for_device"]),
])
def test_vendor_targets(tmp_path, target, expect):
    convert(FIXTURE, target, tmp_path / "o", distributed=True, main="mnist_cuda.py")
    text = (tmp_path / "o" / "mnist_cuda.py").read_text()
    ast.parse(text)
    for e in expect:
        assert e in text, e
    assert "cuda" not in text.replace("mnist_cuda", "")
    sh = (tmp_path / "o" / "run_distributed.sh").read_text()
    t = load_target(target)
    assert f"{t.namespace}.device_count()" in sh and (t.register in sh if t.register else True)
    assert subprocess.run(["bash", "-n", str(tmp_path / "o" / "run_distributed.sh")]).returncode == 0


@pytest.mark.subprocess
def test_mps_is_refused_for_want_of_per_process_devices(tmp_path):
    p = torchport("convert", FIXTURE, "--to", "mps", "-o", tmp_path / "o", "--distributed", "--main", "mnist_cuda.py")
    assert p.returncode == 2 and "per-process device selection" in p.stderr and not (tmp_path / "o").exists()


REFUSED = {
    "no DataLoader": ("""
        import torch
        model = torch.nn.Linear(2, 2).cuda()
        for step in range(10):
            model(torch.randn(4, 2).cuda()).sum().backward()
        """, "no torch.utils.data.DataLoader"),
    "already distributed": ("""
        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader
        dist.init_process_group("nccl")
        model = torch.nn.Linear(2, 2)
        loader = DataLoader(range(8))
        for x in loader:
            model(x)
        """, "already distributed"),
    "sampler": ("""
        import torch
        from torch.utils.data import DataLoader, RandomSampler
        data = list(range(8))
        model = torch.nn.Linear(2, 2)
        loader = DataLoader(data, sampler=RandomSampler(data))
        for x in loader:
            model(x)
        """, "already has a sampler"),
    "no model": ("""
        import torch
        from torch.utils.data import DataLoader
        net = torch.nn.Linear(2, 2)
        loader = DataLoader(range(8))
        for x in loader:
            net(x)
        """, "no assignment to `model`"),
    "two loaders": ("""
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(2, 2)
        a = DataLoader(range(8))
        b = DataLoader(range(4))
        for x in a:
            model(x)
        """, "several DataLoaders (a, b)"),
    "while epochs": ("""
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(2, 2)
        train_loader = DataLoader(range(8), shuffle=True)
        epoch = 0
        while epoch < 3:
            for x in train_loader:
                model(x)
            epoch += 1
        """, "cannot tell the epoch number"),
    "model replaced after training starts": ("""
        import torch
        from torch.utils.data import DataLoader
        train_loader = DataLoader(range(8), shuffle=True)
        model = torch.nn.Linear(2, 2)
        for epoch in range(3):
            for x in train_loader:
                model(x)
        model = model.half()
        """, "`model` is assigned again after training starts"),
    "model made in another branch": ("""
        import torch
        from torch.utils.data import DataLoader
        train_loader = DataLoader(range(8), shuffle=True)
        if torch.cuda.is_available():
            model = torch.nn.Linear(2, 2)
        else:
            for x in train_loader:
                model(x)
        """, "another branch"),
    "unnamed loader": ("""
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(2, 2)
        for x in DataLoader(range(8)):
            model(x)
        """, "not assigned to a variable"),
}


@pytest.mark.subprocess
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_scripts_it_cannot_handle_are_refused_with_the_reason(tmp_path, case):
    source, reason = REFUSED[case]
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(source))
    before = sorted(p.name for p in tmp_path.iterdir())
    p = torchport("convert", script, "--to", "npu", "--distributed")
    assert p.returncode == 2 and reason in p.stderr, p.stderr
    assert p.stderr.startswith("torchport: error: --distributed: train.py:") and len(p.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "nothing is written"


def test_module_level_script_single_pass_and_dataparallel(tmp_path):
    source = textwrap.dedent('''\
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        import logging
        logger = logging.getLogger(__name__)
        data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
        loader = DataLoader(data, batch_size=4)
        model = nn.DataParallel(nn.Linear(4, 1)).cuda(0)
        model = nn.DataParallel(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = ((model(x.cuda()) - y.cuda()) ** 2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            logger.info("loss %s", loss.item())
        print("""done:
        final""", model.weight)
        ''')
    p = plan("train.py", source, load_target("cpu"))
    ast.parse(p.text)
    text = p.text
    assert "dist.init_process_group(backend=\"nccl\")\natexit.register(dist.destroy_process_group)" in text
    assert "model = nn.Linear(4, 1).cuda()" in text and "model = model\n" in text, "DataParallel removed"
    assert "sampler=train_sampler)" in text and "set_epoch" not in text, "one pass: no set_epoch"
    assert "DistributedSampler(data, shuffle=False)" in text
    assert "    if RANK == 0:\n        logger.info" in text
    assert 'if RANK == 0: print("""done:\nfinal""", model.module.weight)' in text, "multi-line string: one-line guard"
    assert text.index("DistributedDataParallel(model)") < text.index("for x, y in loader")
    advice = [f.message for f in p.findings if f.action == "advice"]
    assert any("one pass over the data" in m for m in advice)


def test_function_receiving_the_wrapper_gets_advice_only_when_it_reaches_into_it():
    source = textwrap.dedent('''\
        import torch
        from torch.utils.data import DataLoader

        def fit(net, loader):
            for x in loader:
                net(x).sum().backward()

        def report(net):
            return net.fc.weight.norm()

        def main():
            model = torch.nn.Linear(2, 2)
            train_loader = DataLoader(torch.randn(8, 2), batch_size=2, shuffle=True)
            for epoch in range(2):
                fit(model, train_loader)
                report(model)

        main()
        ''')
    p = plan("t.py", source, load_target("npu"))
    advice = [f for f in p.findings if f.rule == "TP963" and f.action == "advice"]
    assert [f.old for f in advice] == ["report(model)"] and "fc" in advice[0].message


@pytest.mark.subprocess
def test_in_place_diff_and_dry_run(tmp_path):
    src = tmp_path / "p"
    shutil.copytree(FIXTURE, src)
    original = (src / "mnist_cuda.py").read_bytes()
    diff = torchport("convert", src, "--to", "npu", "--distributed", "--main", "mnist_cuda.py", "--diff")
    assert diff.returncode == 0 and "+++ b/run_distributed.sh" in diff.stdout and "+    train_sampler.set_epoch" \
        in diff.stdout.replace("+        train_sampler", "+    train_sampler")
    dry = torchport("convert", src, "--to", "npu", "--distributed", "--main", "mnist_cuda.py", "--dry-run")
    assert dry.returncode == 0 and sorted(p.name for p in src.iterdir()) == sorted(
        p.name for p in FIXTURE.iterdir() if p.name != "__pycache__")
    res = convert(src, "npu", in_place=True, distributed=True, main="mnist_cuda.py")
    assert (src / "run_distributed.sh").is_file() and "hccl" in (src / "mnist_cuda.py").read_text()
    backup = next(p for p in tmp_path.iterdir() if p.name != "p" and "backup" in p.name) if res.backup is None \
        else __import__("pathlib").Path(res.backup)
    assert (backup / "mnist_cuda.py").read_bytes() == original


@pytest.mark.subprocess
def test_usage_errors():
    p = torchport("convert", FIXTURE, "--to", "cpu", "--distributed", "--dry-run")
    assert p.returncode == 2 and "--distributed needs --main" in p.stderr
    p = torchport("convert", FIXTURE, "--to", "cpu", "--main", "mnist_cuda.py", "--dry-run")
    assert p.returncode == 2 and "go with --distributed" in p.stderr
    p = torchport("convert", FIXTURE, "--to", "cpu", "--distributed", "--main", "nope.py", "--dry-run")
    assert p.returncode == 2 and "main script not found" in p.stderr


def test_line_map():
    assert line_map("a\nb\nc\n", "a\nX\nY\nb\nc\n") == [1, 2, 2, 2, 3]
    assert line_map("a\nb\n", "a\nB\n") == [1, 2]


@pytest.mark.distributed
@pytest.mark.subprocess
@pytest.mark.torch
def test_module_level_script_with_global_loader_and_kwargs_runs_on_two_processes(tmp_path):
    out = tmp_path / "out"
    convert(FIXTURE / "globals_cuda.py", "cpu", out / "train.py", distributed=True)
    text = (out / "train.py").read_text()
    assert 'DataLoader(train_sampler.dataset, **{**train_kwargs, "shuffle": False}, sampler=train_sampler)' in text
    assert 'DistributedSampler(Pairs(), shuffle=train_kwargs.get("shuffle", False))' in text
    assert "    if RANK == 0:\n        torch.save(model.module, path)\n        print(\"saved\", path)" in text
    assert text.index("DistributedDataParallel(model)") < text.index("for epoch in range(1, 4):")
    run = run_program(["bash", str(out / "run_distributed.sh"), "-n", "2", str(tmp_path)], capture_output=True,
                      text=True, env=dict(ENV, SHARD_LOG=str(tmp_path / "shard")), timeout=300, cwd=tmp_path,
                      before_retry=lambda: [f.unlink() for f in tmp_path.glob("shard.*")])
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.count("saved") == 3 and run.stdout.count(" loss ") == 3, "rank 0 prints, once per epoch"
    reads = [f.read_text().split() for f in sorted(tmp_path.glob("shard.*"))]
    assert len(reads) == 2
    a, b = (set(map(int, r[1::2][:20])) for r in reads)
    assert len(a) == len(b) == 20 and a | b == set(range(40)), "each process reads its own half"
    import torch
    saved = torch.load(tmp_path / "model_epoch_3.pth", weights_only=False)
    assert type(saved).__name__ == "Sequential", "the model is saved, not its DDP wrapper"


def test_several_models():
    source = textwrap.dedent('''\
        import torch
        from torch.utils.data import DataLoader
        dataloader = DataLoader(torch.randn(32, 4), batch_size=4, shuffle=True)
        netG = torch.nn.Linear(2, 4).cuda()
        netD = torch.nn.Linear(4, 1).cuda()
        optD = torch.optim.Adam(netD.parameters())
        optG = torch.optim.Adam(netG.parameters())
        for epoch in range(2):
            for real in dataloader:
                netD.zero_grad()
                netD(real.cuda()).mean().backward()
                optD.step()
            torch.save(netG.state_dict(), "g.pt")
        ''')
    text = plan("gan.py", source, load_target("npu"), model_var="netG,netD").text
    ast.parse(text)
    assert ("netG = torch.nn.parallel.DistributedDataParallel(netG)\n"
            "netD = torch.nn.parallel.DistributedDataParallel(netD)\nfor epoch in range(2):") in text
    assert "torch.save(netG.module.state_dict()" in text
