import os
import subprocess
from os import environ


def configure(gpus):
    os.environ["MUSA_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    visible = os.environ.get("MUSA_VISIBLE_DEVICES", "")
    alt = os.getenv("MUSA_VISIBLE_DEVICES")
    if "MUSA_VISIBLE_DEVICES" in os.environ:
        del os.environ["MUSA_VISIBLE_DEVICES"]
    environ.setdefault("MUSA_LAUNCH_BLOCKING", "1")
    env = dict(os.environ)
    env["MUSA_VISIBLE_DEVICES"] = "0"
    os.environ.update(MUSA_VISIBLE_DEVICES="1")
    subprocess.run(["python", "x.py"], env={"MUSA_VISIBLE_DEVICES": "0", "PATH": os.environ["PATH"]})
    os.system("CUDA_VISIBLE_DEVICES=0 python x.py")
    return visible, alt
