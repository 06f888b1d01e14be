import os
import subprocess
from os import environ


def configure(gpus):
    os.environ["ZE_AFFINITY_MASK"] = ",".join(map(str, gpus))
    visible = os.environ.get("ZE_AFFINITY_MASK", "")
    alt = os.getenv("ZE_AFFINITY_MASK")
    if "ZE_AFFINITY_MASK" in os.environ:
        del os.environ["ZE_AFFINITY_MASK"]
    environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
    env = dict(os.environ)
    env["ZE_AFFINITY_MASK"] = "0"
    os.environ.update(ZE_AFFINITY_MASK="1")
    subprocess.run(["python", "x.py"], env={"ZE_AFFINITY_MASK": "0", "PATH": os.environ["PATH"]})
    os.system("CUDA_VISIBLE_DEVICES=0 python x.py")
    return visible, alt
