import os
import subprocess
from os import environ


def configure(gpus):
    os.environ["MLU_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    visible = os.environ.get("MLU_VISIBLE_DEVICES", "")
    alt = os.getenv("MLU_VISIBLE_DEVICES")
    if "MLU_VISIBLE_DEVICES" in os.environ:
        del os.environ["MLU_VISIBLE_DEVICES"]
    environ.setdefault("CUDA_LAUNCH_BLOCKING", "1")
    env = dict(os.environ)
    env["MLU_VISIBLE_DEVICES"] = "0"
    os.environ.update(MLU_VISIBLE_DEVICES="1")
    subprocess.run(["python", "x.py"], env={"MLU_VISIBLE_DEVICES": "0", "PATH": os.environ["PATH"]})
    os.system("CUDA_VISIBLE_DEVICES=0 python x.py")
    return visible, alt
