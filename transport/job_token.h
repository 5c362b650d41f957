// The job token: a secret every rank of a job carries (RINGGRAD_JOB_TOKEN, Config::job_token)
// and sends in its hello to the store and to its peers, who refuse a connection without it. It
// keeps out processes that can reach the job's ports but were not given the token; it hides
// nothing on the wire (the token and the data travel in the clear).
#pragma once

#include <string>
#include <string_view>

namespace ringgrad::transport {

/// A fresh token: 128 bits from std::random_device (the kernel's getrandom on Linux), as 32
/// lowercase hex digits.
std::string new_job_token();

/// Whether a and b are the same token, in a time that depends on their lengths only, never on
/// where they first differ: a stranger timing refusals learns nothing of the token's bytes.
bool same_job_token(std::string_view a, std::string_view b);

}  // namespace ringgrad::transport
