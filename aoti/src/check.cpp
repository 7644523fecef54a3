// aoti_torch_check: the one shim function that must report a failure by throwing, into the
// model's C++ code (as libtorch's does), where the container turns it into an error code.
#include <cstdint>
#include <stdexcept>
#include <string>

extern "C" __attribute__((visibility("default"))) void aoti_torch_check(
    bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (cond) return;
  std::string text = std::string("aoti_torch_check failed in ") + (func ? func : "?") + " (" +
                     (file ? file : "?") + ":" + std::to_string(line) + "): " + (msg ? msg : "");
  throw std::runtime_error(text);
}
