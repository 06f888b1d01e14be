import os
import subprocess
from os import environ


def configure(gpus):
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    alt = os.getenv("CUDA_VISIBLE_DEVICES")
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        del os.environ["CUDA_VISIBLE_DEVICES"]
    environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = "0"
    os.environ.update(CUDA_VISIBLE_DEVICES="1")
    subprocess.run(["python", "x.py"], env={"CUDA_VISIBLE_DEVICES": "0", "PATH": os.environ["PATH"]})
    os.system("CUDA_VISIBLE_DEVICES=0 python x.py")
    return visible, alt
