// printable.h - text from outside (file names, metadata, tensor names, user input) made safe
// to print: control characters and invalid UTF-8 become "\xNN" escapes, so an error message
// or a listing cannot drive the terminal or forge log lines.
#pragma once

#include <string>
#include <string_view>

namespace gpt {

// Keeps printable ASCII and valid UTF-8 except C0/C1 controls and DEL; escapes every other
// byte as \xNN. Idempotent (an escape is printable ASCII).
std::string printable(std::string_view text);

} // namespace gpt
