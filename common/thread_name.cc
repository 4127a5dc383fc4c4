// Thread naming (see thread_name.h).
#include "common/thread_name.h"

#include <pthread.h>

#include <string>

namespace gemm {

void SetCurrentThreadName(std::string_view name) {
#ifdef __linux__
  std::string n(name.substr(0, 15));
  pthread_setname_np(pthread_self(), n.c_str());
#else
  (void)name;
#endif
}

}  // namespace gemm
