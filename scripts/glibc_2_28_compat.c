// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
// Two glibc symbols that Debian 12's libstdc++ (its headers, inlined into our code, and
// libstdc++.a, which the wheel links in) refers to and glibc 2.28, the manylinux_2_28 floor, does
// not have. scripts/build_wheel.sh links this object into libtvm_partial.so and into
// tvm_partial_embed.o, hidden or made local there, so neither library exports them or looks for
// glibc's. Only the wheel build uses it.
#include <stdint.h>
#include <sys/random.h>  // getrandom: glibc 2.25

// glibc >= 2.32 sets this to 1 while the process has one thread; libstdc++ then skips atomic
// reference counts and locks. 0, never changed, makes it always take the atomic path: correct
// with any number of threads, as libstdc++ is with glibc before 2.32.
__attribute__((visibility("hidden"))) char __libc_single_threaded = 0;

// glibc >= 2.36. libstdc++.a's std::random_device refers to it (its "arc4random" source); the
// extension never asks for that source. Same contract: random bits from the kernel.
__attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t value;
  while (getrandom(&value, sizeof value, 0) != (ssize_t)sizeof value) {
  }
  return value;
}
