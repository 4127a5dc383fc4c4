// The security flags every command-line client shares (gemm_client, gemm_loadgen): --tls_ca,
// --tls_cert, --tls_key, --token, --token_file.
#pragma once

#include "client/channel_security.h"

namespace gemm::client {

// What the parsed security flags ask for (call after gemm::ParseCommandLine).
ChannelSecurity ChannelSecurityFromFlags();

}  // namespace gemm::client
