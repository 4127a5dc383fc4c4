// Lets ThreadSanitizer see absl::Mutex and absl::CondVar of a system Abseil built without it
// (Debian's): linked into every binary of the tsan preset (GEMM_TSAN_ABSL_SHIM), it wraps their
// entry points, calls the library's own, and tells TSan that the mutex is acquired when a lock
// returns and released before an unlock or a wait. Without it every field an absl::Mutex guards
// reads as a race, since the library's atomics are invisible to TSan. It also turns off the
// mutex deadlock detector, whose graph is guarded by a spin lock TSan cannot see either.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/synchronization/mutex.h"

namespace {

#define GEMM_STR2(x) #x
#define GEMM_STR(x) GEMM_STR2(x)

// The library's definition of the member whose mangled name, after "_ZN4absl<namespace>", is
// `rest` (S0_ in it stands for absl::<namespace>).
template <class F>
F Real(const char* rest) {
  const char* ns = GEMM_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name = "_ZN4absl" + std::to_string(std::strlen(ns)) + ns + rest;
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_absl_shim: %s not found\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

using Cond = const absl::Condition&;

struct DisableDeadlockDetection {
  DisableDeadlockDetection() {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
} disable_deadlock_detection;

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::LockWhen(Cond c) {
  static const auto real = Real<void (*)(Mutex*, Cond)>("5Mutex8LockWhenERKNS0_9ConditionE");
  real(this, c);
  __tsan_acquire(this);
}

void Mutex::ReaderLockWhen(Cond c) {
  static const auto real = Real<void (*)(Mutex*, Cond)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  real(this, c);
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(Cond c, absl::Duration d) {
  static const auto real = Real<bool (*)(Mutex*, Cond, absl::Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = real(this, c, d);
  __tsan_acquire(this);  // held either way
  return met;
}

bool Mutex::LockWhenWithDeadline(Cond c, absl::Time t) {
  static const auto real = Real<bool (*)(Mutex*, Cond, absl::Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = real(this, c, t);
  __tsan_acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithTimeout(Cond c, absl::Duration d) {
  static const auto real = Real<bool (*)(Mutex*, Cond, absl::Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  const bool met = real(this, c, d);
  __tsan_acquire(this);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(Cond c, absl::Time t) {
  static const auto real = Real<bool (*)(Mutex*, Cond, absl::Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  const bool met = real(this, c, t);
  __tsan_acquire(this);
  return met;
}

void Mutex::Await(Cond c) {
  static const auto real = Real<void (*)(Mutex*, Cond)>("5Mutex5AwaitERKNS0_9ConditionE");
  __tsan_release(this);  // others may take the mutex while this waits
  real(this, c);
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(Cond c, absl::Duration d) {
  static const auto real = Real<bool (*)(Mutex*, Cond, absl::Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_release(this);
  const bool met = real(this, c, d);
  __tsan_acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(Cond c, absl::Time t) {
  static const auto real = Real<bool (*)(Mutex*, Cond, absl::Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_release(this);
  const bool met = real(this, c, t);
  __tsan_acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static const auto real = Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  real(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration d) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, absl::Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, d);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time t) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, absl::Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, t);
  __tsan_acquire(mu);
  return timed_out;
}

ABSL_NAMESPACE_END
}  // namespace absl
