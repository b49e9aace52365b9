// JSON text between SpiderMonkey and the node: pure functions, no engine (unit-tested in
// tests/unit/js_json_text_test.cpp).
#pragma once

#include <string>

namespace settee::js {

// UTF-16 JSON text (as JS_Stringify writes it) to UTF-8 that every strict JSON parser takes: an
// unpaired surrogate, raw or written as a \uD8xx-\uDFxx escape (JSON.stringify escapes lone
// surrogates), becomes U+FFFD.
std::string utf16_to_utf8_json(const std::u16string& text);

}  // namespace settee::js
