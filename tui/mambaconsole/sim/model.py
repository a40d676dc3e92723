"""The model and GPU the simulated node serves: Qwen3.6-27B on one GPU.

Numbers come from Qwen3.6-27B's ``config.json`` (``text_config``; the same geometry as
Qwen3.5-27B), architecture ``Qwen3_5ForConditionalGeneration``:

==========================  =======  ==============================================
field                       value    used for
==========================  =======  ==============================================
num_hidden_layers           64       layer count
full_attention_interval     4        every 4th layer is full attention: 16 full, 48 linear
num_key_value_heads         4        KV cache
head_dim                    256      KV cache
linear_num_key_heads        16       Mamba (GDN) conv state
linear_key_head_dim         128      conv state and SSM state
linear_num_value_heads      48       conv state and SSM state
linear_value_head_dim       128      conv state and SSM state
linear_conv_kernel_dim      4        conv window (kernel - 1 = 3 cached inputs)
mamba_ssm_dtype             float32  SSM state element size 4 B (conv state: bfloat16, 2 B)
max_position_embeddings     262144   context_len
==========================  =======  ==============================================

The state shapes follow SGLang's ``Mamba2StateShape.create`` as called by
``Qwen3NextConfig.mamba2_cache_params`` (SGLang 0.5.11, ``srt/configs/qwen3_next.py`` and
``srt/configs/mamba_utils.py``), at TP size 1:

* conv_dim = value_heads * value_dim + 2 * key_heads * key_dim = 6144 + 4096 = 10240;
  conv state per layer (10240, 3) in bf16 = 61,440 B;
* SSM (temporal) state per layer (48, 128, 128) in fp32 = 3,145,728 B;
* one Mamba cache slot (all 48 linear layers) = 153,944,064 B (146.81 MiB);
* KV cache per token (16 full-attention layers, K and V) = 16 * 4 * (256 + 256) * 2 B = 65,536 B.
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class HybridModel:
    """Geometry of a hybrid GDN/full-attention model (sizes in bytes)."""

    name: str
    architecture: str
    num_hidden_layers: int
    full_attention_interval: int
    num_key_value_heads: int
    head_dim: int
    linear_num_key_heads: int
    linear_key_head_dim: int
    linear_num_value_heads: int
    linear_value_head_dim: int
    linear_conv_kernel_dim: int
    context_len: int
    weight_bytes: int
    ssm_itemsize: int = 4  # float32
    conv_itemsize: int = 2  # bfloat16
    kv_itemsize: int = 2  # bfloat16

    @property
    def num_full_layers(self) -> int:
        return self.num_hidden_layers // self.full_attention_interval

    @property
    def num_linear_layers(self) -> int:
        return self.num_hidden_layers - self.num_full_layers

    @property
    def conv_dim(self) -> int:
        return (
            self.linear_num_value_heads * self.linear_value_head_dim
            + 2 * self.linear_num_key_heads * self.linear_key_head_dim
        )

    @property
    def conv_bytes_per_layer(self) -> int:
        return self.conv_dim * (self.linear_conv_kernel_dim - 1) * self.conv_itemsize

    @property
    def ssm_bytes_per_layer(self) -> int:
        return (
            self.linear_num_value_heads
            * self.linear_value_head_dim
            * self.linear_key_head_dim
            * self.ssm_itemsize
        )

    @property
    def conv_bytes_per_slot(self) -> int:
        return self.conv_bytes_per_layer * self.num_linear_layers

    @property
    def ssm_bytes_per_slot(self) -> int:
        return self.ssm_bytes_per_layer * self.num_linear_layers

    @property
    def mamba_bytes_per_slot(self) -> int:
        """SGLang's ``mamba_cache_per_req``: conv + SSM state of one slot, all linear layers."""
        return self.conv_bytes_per_slot + self.ssm_bytes_per_slot

    @property
    def kv_bytes_per_token_one_side(self) -> int:
        """K (or V) bytes per token over all full-attention layers."""
        return self.num_full_layers * self.num_key_value_heads * self.head_dim * self.kv_itemsize

    @property
    def kv_cell_bytes(self) -> int:
        """K + V bytes per token (SGLang's ``cell_size``)."""
        return 2 * self.kv_bytes_per_token_one_side

    def config_json(self) -> dict:
        """The model's ``config.json`` as far as SGLang's sizing reads it (``text_config`` of
        the multimodal wrapper, as Qwen3.6-27B publishes it); the simulated node serves it as
        the model's config for ``mambaconsole plan``."""
        dtype = {4: "float32", 2: "bfloat16"}
        return {
            "architectures": [self.architecture],
            "model_type": "qwen3_5",
            "text_config": {
                "model_type": "qwen3_5_text",
                "num_hidden_layers": self.num_hidden_layers,
                "full_attention_interval": self.full_attention_interval,
                "num_key_value_heads": self.num_key_value_heads,
                "num_attention_heads": 24,
                "hidden_size": 5120,
                "head_dim": self.head_dim,
                "linear_num_key_heads": self.linear_num_key_heads,
                "linear_key_head_dim": self.linear_key_head_dim,
                "linear_num_value_heads": self.linear_num_value_heads,
                "linear_value_head_dim": self.linear_value_head_dim,
                "linear_conv_kernel_dim": self.linear_conv_kernel_dim,
                "max_position_embeddings": self.context_len,
                "mamba_ssm_dtype": dtype[self.ssm_itemsize],
                "torch_dtype": dtype[self.kv_itemsize],
            },
        }


#: Qwen3.6-27B: 51 GB of bf16 weights (51.20 GiB as SGLang's "GB" counts them).
QWEN36_27B = HybridModel(
    name="Qwen/Qwen3.6-27B",
    architecture="Qwen3_5ForConditionalGeneration",
    num_hidden_layers=64,
    full_attention_interval=4,
    num_key_value_heads=4,
    head_dim=256,
    linear_num_key_heads=16,
    linear_key_head_dim=128,
    linear_num_value_heads=48,
    linear_value_head_dim=128,
    linear_conv_kernel_dim=4,
    context_len=262144,
    weight_bytes=int(51.20 * GiB),
)


@dataclass(frozen=True)
class SimGPU:
    """The simulated GPU: ``--sim-gpu "NAME,GIB"`` (total memory in GiB)."""

    name: str
    total_bytes: int

    @classmethod
    def parse(cls, text: str) -> "SimGPU":
        """Parse ``"RTX PRO 6000 Blackwell,96"``; raises ValueError on bad input."""
        name, sep, size = text.rpartition(",")
        if not sep or not name.strip():
            raise ValueError(f"--sim-gpu wants 'NAME,GIB', got {text!r}")
        gib = float(size)
        if gib <= 0:
            raise ValueError(f"--sim-gpu memory must be positive, got {size!r}")
        return cls(name=name.strip(), total_bytes=int(gib * GiB))

    @property
    def total_mib(self) -> int:
        return self.total_bytes // MiB
