"""Node facts for a memory plan, read on the node (stdlib only; sent to the node's python on
stdin like the resolver): ``python - MODEL_PATH`` prints one JSON line

``{"model_path", "config_path", "config" (config.json as a dict, or null), "weights_bytes"
(int or null), "weights_source" ("index" | "safetensors" | null), "weights_files" (int),
"gpus": [{"index", "name", "total_bytes", "free_bytes"}], "gpu_source" ("nvml" | "nvidia-smi"
| null), "errors": [str]}``.

* ``config.json`` of ``--model-path``: a folder, or a Hugging Face repo id looked up in the hub
  cache (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``):
  ``models--ORG--NAME/snapshots/<refs/main>`` (the newest snapshot without ``refs/main``).
* Weights: ``model.safetensors.index.json``'s ``metadata.total_size`` ("index"), else the sum of
  every ``*.safetensors`` file's tensor byte ranges from its header (8-byte little-endian length,
  then JSON with ``data_offsets``; the tensors are never read) ("safetensors").
* GPUs: NVML through ``pynvml`` (nvidia-ml-py, installed with SGLang), else ``nvidia-smi
  --query-gpu=index,name,memory.total,memory.free --format=csv,noheader,nounits`` (MiB).
"""

import glob
import json
import os
import struct
import subprocess
import sys


def snapshot_dir(model_path):
    if os.path.isdir(model_path):
        return model_path
    if model_path.count("/") != 1:
        return None
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub")
    repo = os.path.join(hub, "models--" + model_path.replace("/", "--"))
    ref = os.path.join(repo, "refs", "main")
    if os.path.isfile(ref):
        with open(ref) as f:
            snap = os.path.join(repo, "snapshots", f.read().strip())
        if os.path.isdir(snap):
            return snap
    snaps = sorted(glob.glob(os.path.join(repo, "snapshots", "*")), key=os.path.getmtime)
    return snaps[-1] if snaps else None


def safetensors_bytes(path):
    """Tensor bytes of one .safetensors file, from its header only."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > 100_000_000:
            raise ValueError(f"{path}: header of {n} bytes is not a safetensors header")
        header = json.loads(f.read(n))
    total = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        total += end - start
    return total


def weights(folder, errors):
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if os.path.isfile(index):
        try:
            with open(index) as f:
                size = json.load(f).get("metadata", {}).get("total_size")
            if isinstance(size, int) and size > 0:
                return size, "index", len(files)
        except (OSError, ValueError) as e:
            errors.append(f"{index}: {e}")
    if not files:
        return None, None, 0
    total = 0
    for p in files:
        try:
            total += safetensors_bytes(p)
        except (OSError, ValueError, KeyError, struct.error) as e:
            errors.append(f"{p}: {e}")
            return None, None, len(files)
    return total, "safetensors", len(files)


def gpus(errors):
    try:
        import pynvml
        pynvml.nvmlInit()
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            name = pynvml.nvmlDeviceGetName(h)
            out.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name,
                        "total_bytes": int(mem.total), "free_bytes": int(mem.free)})
        return out, "nvml"
    except Exception as e:  # no pynvml, no driver
        errors.append(f"NVML: {type(e).__name__}: {e}")
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=index,name,memory.total,memory.free",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
        out = []
        for line in r.stdout.splitlines():
            i, name, total, free = [x.strip() for x in line.split(",")]
            out.append({"index": int(i), "name": name, "total_bytes": int(float(total)) << 20,
                        "free_bytes": int(float(free)) << 20})
        if r.returncode == 0 and out:
            return out, "nvidia-smi"
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        errors.append(f"nvidia-smi: {e}")
    return [], None


def main(argv):
    model_path = argv[0] if argv else ""
    errors = []
    folder = snapshot_dir(model_path) if model_path else None
    config, config_path = None, None
    wb, ws, nfiles = None, None, 0
    if folder:
        config_path = os.path.join(folder, "config.json")
        try:
            with open(config_path) as f:
                config = json.load(f)
        except (OSError, ValueError) as e:
            errors.append(f"{config_path}: {e}")
            config_path = None
        wb, ws, nfiles = weights(folder, errors)
    else:
        errors.append(f"{model_path!r}: not a folder and not in the Hugging Face cache")
    g, gs = gpus(errors)
    print(json.dumps({"model_path": model_path, "config_path": config_path, "config": config,
                      "weights_bytes": wb, "weights_source": ws, "weights_files": nfiles,
                      "gpus": g, "gpu_source": gs, "errors": errors}))


if __name__ == "__main__":
    main(sys.argv[1:])
