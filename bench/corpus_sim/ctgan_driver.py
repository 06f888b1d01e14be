"""ctgan on a (simulated) device: CTGAN (generator + PacGAN discriminator with gradient penalty, conditional
vectors) and TVAE trained by ctgan's own fit loops on a small synthetic mixed table (rdt's
ClusterBasedNormalizer / one-hot transforms), the device chosen by ctgan itself (enable_gpu=True ->
ctgan.synthesizers._utils._set_device; the deprecated cuda=True path too), seeded by its set_random_state.
The losses are ctgan's own loss_values (per epoch for CTGAN, per batch for TVAE); the evaluation is a
seeded sample() after a save/load round trip (BaseSynthesizer.save/load: to cpu, torch.save, torch.load,
back to the device ctgan picks).  Prints `RESULT {json}`.
Environment: TREE (the converted ctgan), DEV (cpu, npu, mlu, musa); its deps (rdt, pandas, scikit-learn,
scipy, Faker, ...) on PYTHONPATH."""
import json
import os
import sys
import tempfile
import warnings

sys.path.insert(0, os.environ["TREE"])
import numpy as np
import pandas as pd
import torch
from ctgan import CTGAN, TVAE
from ctgan.synthesizers._utils import _set_device

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

rng = np.random.RandomState(0)
N = 80
data = pd.DataFrame({
    "x": np.concatenate([rng.normal(0, 1, N // 2), rng.normal(5, 0.5, N // 2)]),
    "y": rng.exponential(2.0, N),
    "color": rng.choice(["red", "green", "blue"], N),
    "flag": rng.choice(["yes", "no"], N),
})
discrete = ["color", "flag"]

out = {"device": str(_set_device(True)), "models": {},
       "selected": {"auto": str(_set_device(True)), "cpu": str(_set_device(False))}}
MODELS = {
    "ctgan": (CTGAN, dict(embedding_dim=16, generator_dim=(32,), discriminator_dim=(32,), batch_size=20, pac=10,
                          epochs=3, enable_gpu=True)),
    "ctgan_cuda_kw": (CTGAN, dict(embedding_dim=16, generator_dim=(32,), discriminator_dim=(32,), batch_size=40,
                                  pac=10, epochs=2, cuda=True)),
    "tvae": (TVAE, dict(embedding_dim=8, compress_dims=(32,), decompress_dims=(32,), batch_size=40, epochs=2,
                        enable_gpu=True)),
}
for name, (cls, kwargs) in MODELS.items():
    model = cls(**kwargs)
    model.set_random_state(0)
    model.fit(data, discrete)
    values = model.loss_values
    losses = [float(v) for col in values.columns if "Loss" in col for v in values[col]]
    params = model._generator if cls is CTGAN else model.decoder
    on = str(next(params.parameters()).device)
    with tempfile.TemporaryDirectory() as tmp:
        model.save(os.path.join(tmp, "m.pkl"))
        loaded = cls.load(os.path.join(tmp, "m.pkl"))
    loaded.set_random_state(1)
    sample = loaded.sample(32)
    evaluated = float(sample[["x", "y"]].to_numpy().sum()) + float((sample["color"] == "red").sum())
    out["models"][name] = {"losses": losses, "ema_eval": evaluated, "on": on, "loaded_on": str(loaded._device)}
print("RESULT " + json.dumps(out), flush=True)
