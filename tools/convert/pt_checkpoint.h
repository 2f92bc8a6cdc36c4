// pt_checkpoint.h - models from PyTorch training scripts, recognised from the file itself
// and mapped onto the gpt2 architecture (zero biases where the script has none, per-head
// key/query/value fused into the QKV matrix: both exact):
//   nanoGPT ckpt.pt   {'model': state dict, 'model_args': {n_layer, n_head, n_embd, block_size,
//                     bias, vocab_size, ...}, 'config': {'dataset', ...}, 'optimizer', ...};
//                     torch.compile's "_orig_mod." prefix removed; exact (erf) GELU; head tied
//                     to wte when both share a storage. attn.bias masks and the optimizer state
//                     are never read.
//   minGPT            a bare state dict with nanoGPT's names, biases everywhere, untied head,
//                     tanh GELU; n_head from config.json beside the file (model.model_type or
//                     model.n_head) or --n-head.
//   lecture gpt.py    token_embedding_table, position_embedding_table, blocks.N.sa.heads.H.
//                     {key,query,value} (no bias), sa.proj, ffwd.net.0/2 (ReLU), ln1/ln2, ln_f,
//                     lm_head with bias; heads counted from the names.
// Anything else is refused with the names it did not recognise.
#pragma once

#include "convert/tensor_plan.h"

#include <cstdint>
#include <string>

namespace gpt::convert {

struct PtOptions {
    std::string meta;      // nanoGPT meta.pkl (default: data/<config.dataset>/meta.pkl if present)
    uint32_t n_head = 0;   // minGPT: heads when no config.json says (0: from config.json)
};

// Plans the tensors of a .pt file; the plan keeps the mapping alive and carries the
// character vocabulary of meta.pkl when one was found (plan.tokenizer).
TensorPlan plan_pt_checkpoint(const std::string &path, const PtOptions &opt);

} // namespace gpt::convert
