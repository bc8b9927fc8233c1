// Thread names, so that top -H, perf and debuggers say which of the server's threads is which.
#pragma once

#include <pthread.h>

#include <string>

namespace duet::sched {

/// Names the calling thread (the kernel keeps the first 15 bytes). Best effort: a failure is
/// ignored, since a name only labels the thread. Cost: one prctl.
inline void name_this_thread(const std::string& name) {
  (void)::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace duet::sched
