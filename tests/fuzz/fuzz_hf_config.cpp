// fuzz_hf_config - the converter's config.json reader (tools/convert/hf_config.cpp): any
// text in, either a config the engine can run (validated: every limit that keeps size
// arithmetic far from overflow holds) or GPT_ERR_FORMAT / GPT_ERR_UNSUPPORTED naming the key.
#include "common.h"

#include "convert/hf_config.h"
#include "core/error.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text((const char *)data, size);
    try {
        const gpt::convert::HfConfig h = gpt::convert::parse_hf_config(text, "config.json");
        h.config.validate("config.json"); // what parse promised; must not throw now
        FUZZ_CHECK(h.config.eos_id == (h.eos_ids.empty() ? -1 : h.eos_ids[0]), "eos ids");
        for (int32_t e : h.eos_ids) FUZZ_CHECK(e >= 0 && (uint32_t)e < h.config.vocab_size, "eos id %d", e);
    } catch (const gpt::Error &e) {
        FUZZ_CHECK(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED, "status %d: %s", (int)e.status(), e.what());
    }
    return 0;
}
