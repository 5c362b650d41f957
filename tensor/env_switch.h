// On/off switches read from the environment (RINGGRAD_ONEDNN, RINGGRAD_ATTENTION_TILES): unset
// or "1" is on, "0" is off, and anything else is refused rather than guessed at.
#pragma once

namespace ringgrad::kernels {

/// Whether the switch `name` is on. `off` and `on` say what "0" and "1" mean, for the error.
/// Throws std::invalid_argument "NAME=value: must be 0 (off) or 1 (on)" for any other value.
bool env_switch(const char* name, const char* off, const char* on);

}  // namespace ringgrad::kernels
