/* layout.c - prints the size of each public params struct and the offset of each of its
 * fields as the C compiler lays them out, one "name value" per line, for the Python
 * binding's layout test (bindings/python/tests/test_libgpt.py compares them with ctypes). */
#include "gpt.h"

#include <stddef.h>
#include <stdio.h>

#define SIZE(s) printf("%s %zu\n", #s, sizeof(s))
#define FIELD(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(s, f))

int main(void) {
    SIZE(gpt_model_params);
    FIELD(gpt_model_params, struct_size);
    FIELD(gpt_model_params, device);
    FIELD(gpt_model_params, weight_dtype);
    FIELD(gpt_model_params, flags);

    SIZE(gpt_model_info);
    FIELD(gpt_model_info, struct_size);
    FIELD(gpt_model_info, arch);
    FIELD(gpt_model_info, n_layers);
    FIELD(gpt_model_info, d_model);
    FIELD(gpt_model_info, n_heads);
    FIELD(gpt_model_info, n_kv_heads);
    FIELD(gpt_model_info, head_dim);
    FIELD(gpt_model_info, d_ff);
    FIELD(gpt_model_info, vocab_size);
    FIELD(gpt_model_info, context_length);
    FIELD(gpt_model_info, file_dtype);
    FIELD(gpt_model_info, weight_dtype);
    FIELD(gpt_model_info, device);
    FIELD(gpt_model_info, bos_token);
    FIELD(gpt_model_info, eos_token);
    FIELD(gpt_model_info, flags);
    FIELD(gpt_model_info, norm_eps);
    FIELD(gpt_model_info, rope_theta);
    FIELD(gpt_model_info, n_params);
    FIELD(gpt_model_info, host_bytes);
    FIELD(gpt_model_info, device_bytes);
    FIELD(gpt_model_info, name);
    FIELD(gpt_model_info, n_experts);
    FIELD(gpt_model_info, n_experts_used);
    FIELD(gpt_model_info, d_ff_expert);
    FIELD(gpt_model_info, d_ff_shared);
    FIELD(gpt_model_info, n_active_params);

    SIZE(gpt_ctx_params);
    FIELD(gpt_ctx_params, struct_size);
    FIELD(gpt_ctx_params, max_batch);
    FIELD(gpt_ctx_params, max_seq);
    FIELD(gpt_ctx_params, max_step_tokens);
    FIELD(gpt_ctx_params, compute_dtype);
    FIELD(gpt_ctx_params, kv_dtype);
    FIELD(gpt_ctx_params, n_threads);
    FIELD(gpt_ctx_params, flags);
    FIELD(gpt_ctx_params, abort_fn);
    FIELD(gpt_ctx_params, abort_user);

    SIZE(gpt_sampling_params);
    FIELD(gpt_sampling_params, struct_size);
    FIELD(gpt_sampling_params, temperature);
    FIELD(gpt_sampling_params, top_k);
    FIELD(gpt_sampling_params, top_p);
    FIELD(gpt_sampling_params, min_p);
    FIELD(gpt_sampling_params, repetition_penalty);
    FIELD(gpt_sampling_params, repetition_last_n);
    FIELD(gpt_sampling_params, flags);
    FIELD(gpt_sampling_params, seed);
    FIELD(gpt_sampling_params, stop_tokens);
    FIELD(gpt_sampling_params, n_stop_tokens);
    FIELD(gpt_sampling_params, reserved);
    FIELD(gpt_sampling_params, stop_strings);
    FIELD(gpt_sampling_params, n_stop_strings);
    FIELD(gpt_sampling_params, frequency_penalty);
    FIELD(gpt_sampling_params, presence_penalty);
    FIELD(gpt_sampling_params, n_logit_bias);
    FIELD(gpt_sampling_params, logit_bias);

    SIZE(gpt_logit_bias);
    FIELD(gpt_logit_bias, token);
    FIELD(gpt_logit_bias, bias);

    SIZE(gpt_device_info);
    FIELD(gpt_device_info, struct_size);
    FIELD(gpt_device_info, device);
    FIELD(gpt_device_info, integrated);
    FIELD(gpt_device_info, pageable_access);
    FIELD(gpt_device_info, host_mapped);
    FIELD(gpt_device_info, cc_major);
    FIELD(gpt_device_info, cc_minor);
    FIELD(gpt_device_info, multiprocessors);
    FIELD(gpt_device_info, total_bytes);
    FIELD(gpt_device_info, available_bytes);
    FIELD(gpt_device_info, name);

    SIZE(gpt_chat_message);
    FIELD(gpt_chat_message, role);
    FIELD(gpt_chat_message, content);
    return 0;
}
