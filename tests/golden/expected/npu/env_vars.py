import os
import subprocess
from os import environ


def configure(gpus):
    os.environ["ASCEND_RT_VISIBLE_DEVICES"] = ",".join(map(str, gpus))
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "")
    alt = os.getenv("ASCEND_RT_VISIBLE_DEVICES")
    if "ASCEND_RT_VISIBLE_DEVICES" in os.environ:
        del os.environ["ASCEND_RT_VISIBLE_DEVICES"]
    environ.setdefault("ASCEND_LAUNCH_BLOCKING", "1")
    env = dict(os.environ)
    env["ASCEND_RT_VISIBLE_DEVICES"] = "0"
    os.environ.update(ASCEND_RT_VISIBLE_DEVICES="1")
    subprocess.run(["python", "x.py"], env={"ASCEND_RT_VISIBLE_DEVICES": "0", "PATH": os.environ["PATH"]})
    os.system("CUDA_VISIBLE_DEVICES=0 python x.py")
    return visible, alt
