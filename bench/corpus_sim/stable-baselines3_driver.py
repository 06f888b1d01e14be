"""stable-baselines3 on a (simulated) device: PPO and A2C (on-policy, rollout buffer) and DQN (off-policy,
replay buffer, target network) on CartPole-v1, the device chosen by sb3 itself (device="auto",
stable_baselines3.common.utils.get_device) and seeded by its set_random_seed.  Each model learns a few
rollouts / updates with sb3's own learn loop; the losses are what its train() logged after each update;
the evaluation is the trained policy's deterministic actions and values on fixed observations, after a
save/load round trip (sb3's save_util, loaded with device="auto").  Prints `RESULT {json}`.
Environment: TREE (the converted stable-baselines3), DEV (cpu, npu, mlu, musa); gymnasium on PYTHONPATH."""
import json
import os
import sys
import tempfile
import warnings

sys.path.insert(0, os.environ["TREE"])
import numpy as np
import torch
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.utils import get_device

warnings.filterwarnings("ignore")
torch.set_num_threads(1)
# sb3's logger makes a folder in the system's temp folder on every learn() unless SB3_LOGDIR names one: this
# driver's own, removed when it exits
_logs = tempfile.TemporaryDirectory(prefix="torchport-sb3-logs-")
os.environ["SB3_LOGDIR"] = _logs.name

MODELS = {
    "ppo": (PPO, dict(n_steps=32, batch_size=16, n_epochs=2), 64, ("train/loss",)),
    "a2c": (A2C, dict(n_steps=8), 24, ("train/policy_loss", "train/value_loss")),
    "dqn": (DQN, dict(learning_starts=16, train_freq=4, gradient_steps=1, buffer_size=1000, batch_size=8,
                      target_update_interval=8), 28, ("train/loss",)),
}
obs = np.random.RandomState(1).uniform(-0.2, 0.2, size=(8, 4)).astype(np.float32)
out = {"device": str(get_device("auto")), "models": {},
       "selected": {"auto": str(get_device("auto")), "cpu": str(get_device("cpu"))}}
for name, (cls, kwargs, steps, keys) in MODELS.items():
    model = cls("MlpPolicy", "CartPole-v1", seed=0, device="auto", policy_kwargs=dict(net_arch=[32, 32]),
                **kwargs)
    losses = []
    train = model.train

    def logged_train(*a, _train=train, _model=model, _losses=losses, _keys=keys, **k):
        _train(*a, **k)
        _losses.extend(float(_model.logger.name_to_value[key]) for key in _keys)

    model.train = logged_train
    model.learn(total_timesteps=steps)
    on = str(next(model.policy.parameters()).device)
    with tempfile.TemporaryDirectory() as tmp:
        model.save(os.path.join(tmp, name))
        loaded = cls.load(os.path.join(tmp, name), device="auto")
    actions, _ = loaded.predict(obs, deterministic=True)
    with torch.no_grad():
        t = torch.as_tensor(obs, device=loaded.device)
        if name == "dqn":
            values = loaded.q_net(t).sum().item()
        else:
            values = loaded.policy.predict_values(t).sum().item()
    out["models"][name] = {"losses": losses, "ema_eval": values + float(np.sum(actions)), "on": on,
                           "loaded_on": str(loaded.device)}
print("RESULT " + json.dumps(out), flush=True)
