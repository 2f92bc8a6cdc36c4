"""torch_quant_linear.py - weight-only int4 / int8 linear layers for the PyTorch peer of
bench/compare_pytorch_quant.py, on PyTorch's own kernels (no torchao, no compiler):

- Int4Linear: torch.ops.aten._weight_int4pack_mm (the tensor-core "tinygemm" kernel; bf16
  activations, bf16 output). Symmetric round-to-nearest per group of G weights along K, as ours
  (docs/FORMAT.md 5.1): scale = bf16(max|w| / 7), code = round(w / scale) clamped to [-8, 7],
  stored as code + 8 in 4 bits, zero point 0. The kernel reconstructs (code - 8) * scale + zero
  in bf16, so it reads 4 bits a weight plus 4 bytes (bf16 scale and zero) a group.
- Int8Linear: one scale a row (output channel), scale = max|w| / 127 in the activations' dtype;
  forward either torch.ops.aten._weight_int8pack_mm or the naive form
  x @ (w_int8.to(x.dtype) * scale).T (dequantize every call, then cuBLAS).

dequantized() rebuilds the exact weights the kernel should use (Int4Linear: only if built with
keep_reference=True, which keeps its codes): the correctness guard compares the op with an f64
matmul of those (guard_error below).
"""
import torch
import torch.nn as nn

INT4_OPS = ("_convert_weight_to_int4pack", "_weight_int4pack_mm")
INT8_OPS = ("_weight_int8pack_mm",)


def op_schema(name):
    """The installed torch's schema of torch.ops.aten.NAME, or why it is missing."""
    try:
        return str(getattr(torch.ops.aten, name).default._schema)
    except Exception as e:  # noqa: BLE001 - an absent op raises AttributeError or RuntimeError
        return f"missing ({type(e).__name__}: {str(e)[:120]})"


def inner_k_tiles(k):
    """The widest packing the int4 kernel takes for K: 8, 4 or 2 k-tiles of 16 (16-, 8- or 4-byte loads)."""
    for tiles in (8, 4, 2):
        if k % (16 * tiles) == 0:
            return tiles
    raise ValueError(f"K = {k} is not a multiple of 32, which the int4 pack needs")


def quantize_int4(w, group):
    """Codes (uint8 0..15, code - 8 is the integer) [n][k] and bf16 scales [n][k / group] of w [n][k]."""
    n, k = w.shape
    if k % group:
        raise ValueError(f"group {group} does not divide K = {k}")
    g = w.float().view(n, k // group, group)
    scale = (g.abs().amax(-1) / 7).to(torch.bfloat16)
    s = scale.float().unsqueeze(-1)
    q = torch.round(g / torch.where(s > 0, s, torch.ones_like(s)))  # a group of zeros: scale 0, codes 0
    return (q.clamp_(-8, 7) + 8).to(torch.uint8).view(n, k), scale


def pack_int4(codes, tiles):
    """PyTorch's tensor-core layout of codes [n][k]: torch >= 2.5 takes uint8 [n][k / 2] with the even
    k in the high nibble, older torch int32 [n][k]. Returns (packed, which input form worked)."""
    try:
        pairs = ((codes[:, 0::2] << 4) | codes[:, 1::2]).contiguous()
        return torch.ops.aten._convert_weight_to_int4pack(pairs, tiles), "uint8 [n][k/2]"
    except Exception as first:  # noqa: BLE001 - try the older signature before giving up
        try:
            return torch.ops.aten._convert_weight_to_int4pack(codes.to(torch.int32).contiguous(), tiles), "int32 [n][k]"
        except Exception:  # noqa: BLE001
            raise first


class Int4Linear(nn.Module):
    """nn.Linear's weight in int4 for each group size in groups; .group picks the one forward uses."""

    packing = None  # the input form _convert_weight_to_int4pack accepted (printed once per run)

    def __init__(self, linear, groups, keep_reference=False):
        super().__init__()
        w = linear.weight.detach()
        self.out_features, self.in_features = w.shape
        tiles = inner_k_tiles(self.in_features)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(torch.bfloat16))
        self.codes, self.scales = {}, {}
        for g in groups:
            codes, scale = quantize_int4(w, g)
            packed, Int4Linear.packing = pack_int4(codes, tiles)
            # [k / g][n][2]: scale and zero (0) of each group, what the kernel indexes
            sz = torch.stack([scale, torch.zeros_like(scale)], -1).transpose(0, 1).contiguous()
            self.register_buffer(f"packed_g{g}", packed)
            self.register_buffer(f"scale_zero_g{g}", sz)
            if keep_reference:
                self.codes[g], self.scales[g] = codes, scale
            del codes
        self.group = groups[0]

    def forward(self, x):
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
        if x2.dtype != torch.bfloat16:
            x2 = x2.to(torch.bfloat16)
        y = torch.ops.aten._weight_int4pack_mm(x2.contiguous(), getattr(self, f"packed_g{self.group}"), self.group,
                                               getattr(self, f"scale_zero_g{self.group}"))
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features).to(x.dtype)

    def nbytes(self):
        """Bytes a forward reads for its weight: the packed codes, scales and zeros, bias."""
        tensors = [getattr(self, f"packed_g{self.group}"), getattr(self, f"scale_zero_g{self.group}"), self.bias]
        return sum(t.numel() * t.element_size() for t in tensors if t is not None)

    def dequantized(self):
        """The weights [n][k] the kernel should reconstruct, in f32 (needs keep_reference)."""
        g = self.group
        ints = self.codes[g].float().view(self.out_features, -1, g) - 8
        return (ints * self.scales[g].float().unsqueeze(-1)).view(self.out_features, self.in_features)


class Int8Linear(nn.Module):
    """nn.Linear's weight in int8 with one scale a row; .mode is "pack" (_weight_int8pack_mm) or
    "dequant" (the naive form)."""

    def __init__(self, linear):
        super().__init__()
        w = linear.weight.detach()
        self.out_features, self.in_features = w.shape
        wf = w.float()
        scale = (wf.abs().amax(1) / 127).to(w.dtype)
        s = scale.float().unsqueeze(1)
        q = torch.round(wf / torch.where(s > 0, s, torch.ones_like(s))).clamp_(-127, 127).to(torch.int8)
        del wf
        self.register_buffer("weight_int8", q.contiguous())
        self.register_buffer("scale", scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach())
        self.mode = "pack"

    def forward(self, x):
        if self.mode == "dequant":
            return nn.functional.linear(x, self.weight_int8.to(x.dtype) * self.scale.to(x.dtype).unsqueeze(1), self.bias)
        shape = x.shape
        y = torch.ops.aten._weight_int8pack_mm(x.reshape(-1, self.in_features).contiguous(), self.weight_int8,
                                               self.scale.to(x.dtype))
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features)

    def nbytes(self):
        tensors = [self.weight_int8, self.scale, self.bias]
        return sum(t.numel() * t.element_size() for t in tensors if t is not None)

    def dequantized(self):
        return self.weight_int8.float() * self.scale.float().unsqueeze(1)


def replace_linears(model, make):
    """Every nn.Linear of model (the head included) replaced by make(name, linear), one at a time so
    that each float weight is freed before the next is quantized. Returns the names replaced."""
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, make(name, getattr(parent, child)))
    return names


def linear_bytes(model):
    """Bytes of every linear layer's weight (and bias) as its forward reads them."""
    total = 0
    for m in model.modules():
        if isinstance(m, (Int4Linear, Int8Linear)):
            total += m.nbytes()
        elif isinstance(m, nn.Linear):
            total += sum(p.numel() * p.element_size() for p in m.parameters())
    return total


@torch.no_grad()
def guard_error(module, rows, dtype, seed=0):
    """max |module(x) - x @ dequantized(w).T| / max |x @ dequantized(w).T| for random x [rows][k]
    in dtype, the reference in f64 (no TF32 whatever the matmul settings) from the same
    (dtype-rounded) x and the dequantized f32 weights."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, module.in_features, device="cuda", generator=gen).to(dtype)
    ref = x.double() @ module.dequantized().double().T
    if module.bias is not None:
        ref += module.bias.double()
    got = module(x).double()
    scale = ref.abs().max().item()
    if not scale > 0:
        raise ValueError("the reference output is all zero: the quantized weights are empty")
    return (got - ref).abs().max().item() / scale
