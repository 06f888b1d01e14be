"""pytorch-tabnet on a (simulated) device: TabNetPretrainer, TabNetClassifier (warm-started from the
pretrainer) and TabNetRegressor, built and trained by tabnet's own fit loop (its DataLoader with
pin_memory on a non-cpu device, ghost batch norm, sparsemax/entmax masks, feature importance), the device
chosen by tabnet itself (device_name="auto", pytorch_tabnet.utils.define_device).  One epoch of 3 batches
each; the batch losses come from tabnet's callback hook, the evaluation is predict/predict_proba on held-out
data.  Prints `RESULT {json}`.
Environment: TREE (the converted pytorch-tabnet), DEV (cpu, npu, mlu, musa); its deps (scikit-learn, scipy,
pandas, ...) on PYTHONPATH."""
import json
import os
import sys
import warnings

sys.path.insert(0, os.environ["TREE"])
import numpy as np
import torch
from pytorch_tabnet.callbacks import Callback
from pytorch_tabnet.pretraining import TabNetPretrainer
from pytorch_tabnet.tab_model import TabNetClassifier, TabNetRegressor
from pytorch_tabnet.utils import define_device

warnings.filterwarnings("ignore")
torch.set_num_threads(1)


class BatchLosses(Callback):
    def __init__(self):
        super().__init__()
        self.losses = []

    def on_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))


rng = np.random.RandomState(0)
N, F = 96, 6
X = rng.randn(N, F).astype(np.float32)
X[:, 0] = rng.randint(0, 4, N)           # a categorical column (embedding)
y_cls = (X[:, 1] + X[:, 2] > 0).astype(np.int64)
y_reg = (X[:, 1:2] * 2.0 - X[:, 3:4]).astype(np.float32)
X_test = rng.randn(16, F).astype(np.float32)
X_test[:, 0] = rng.randint(0, 4, 16)
common = dict(n_d=8, n_a=8, n_steps=2, cat_idxs=[0], cat_dims=[4], cat_emb_dim=2, seed=0, verbose=0,
              device_name="auto", optimizer_params=dict(lr=2e-2))
fit = dict(max_epochs=1, patience=0, batch_size=32, virtual_batch_size=16, num_workers=0, drop_last=False)

out = {"device": define_device("auto"), "models": {},
       "selected": {"auto": define_device("auto"), "cpu": define_device("cpu")}}


def record(name, model, cb, evaluated):
    out["models"][name] = {"losses": cb.losses, "ema_eval": float(evaluated),
                           "on": str(next(model.network.parameters()).device)}


cb = BatchLosses()
pre = TabNetPretrainer(mask_type="entmax", **common)
pre.fit(X, eval_set=[X_test], pretraining_ratio=0.5, callbacks=[cb], **fit)
rec, _ = pre.predict(X_test)
record("pretrainer", pre, cb, np.asarray(rec).sum())

cb = BatchLosses()
clf = TabNetClassifier(mask_type="sparsemax", **common)
clf.fit(X, y_cls, eval_set=[(X_test, (X_test[:, 1] > 0).astype(np.int64))], eval_metric=["accuracy"],
        callbacks=[cb], from_unsupervised=pre, **fit)
record("classifier", clf, cb, clf.predict_proba(X_test)[:, 1].sum() + clf.feature_importances_[1])

cb = BatchLosses()
reg = TabNetRegressor(**common)
reg.fit(X, y_reg, callbacks=[cb], **fit)
explain, _ = reg.explain(X_test)
record("regressor", reg, cb, reg.predict(X_test).sum() + float(np.asarray(explain).sum()) * 1e-3)

print("RESULT " + json.dumps(out), flush=True)
