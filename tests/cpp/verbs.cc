// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
// The public C++ verbs (tvm_partial::Inspect, Verify, OpenWeights, Rebind), their answers and
// refusals, printed one line each for tests/test_deploy.py to compare:
//
//   verbs ARTIFACT.so WEIGHTS.safetensors NOT_A_MODEL.onnx PLAIN.so
//
// ARTIFACT.so binds b and c of main(a, b, c, out) by name; WEIGHTS.safetensors holds other b, c;
// PLAIN.so is the compiled code alone.
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm_partial/partial_apply.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>

namespace ffi = tvm::ffi;

void Refused(const char* what, const std::function<void()>& verb) {
  try {
    verb();
    std::cout << what << ": not refused\n";
  } catch (const ffi::Error& err) {
    std::cout << what << ": " << err.kind() << ": " << err.message() << "\n";
  }
}

// A float32 tensor of `n` elements whose data lies 4 bytes past a 64-byte boundary.
struct Misaligned {
  alignas(64) float storage[64];
  void AllocData(DLTensor* t) { t->data = reinterpret_cast<char*>(storage) + 4; }
  void FreeData(DLTensor*) {}
};

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  const std::string artifact = std::filesystem::absolute(argv[1]).string();
  std::cout << std::boolalpha;
  try {
    std::cout << "inspect: " << tvm_partial::Inspect(artifact).at("kind").cast<ffi::String>()
              << "\n";
    std::cout << "verify: intact " << tvm_partial::Verify(artifact).at("intact").cast<bool>()
              << "\n";
    ffi::Module pm = ffi::Module::LoadFromFile(artifact);
    auto weights = tvm_partial::OpenWeights(argv[2]);
    const ffi::Any b = weights.at(ffi::String("b"));
    ffi::Module rebound = tvm_partial::Rebind(pm, "main", weights);
    auto held = tvm_partial::PartialApplyBindings(rebound).at("main");
    std::cout << "rebound by name, b held as given: "
              << (held.at(1).cast<ffi::Tensor>().data_ptr() == b.cast<ffi::Tensor>().data_ptr())
              << "\n";
    static Misaligned memory;
    auto odd = ffi::Tensor::FromNDAlloc(memory, ffi::Shape({16}), DLDataType{kDLFloat, 32, 1},
                                        DLDevice{kDLCPU, 0});
    auto copied = tvm_partial::PartialApplyBindings(tvm_partial::Rebind(pm, "main", {{1, odd}}))
                      .at("main")
                      .at(1)
                      .cast<ffi::Tensor>();
    std::cout << "misaligned b copied, aligned: "
              << (reinterpret_cast<uintptr_t>(copied.data_ptr()) % 64 == 0 &&
                  copied.data_ptr() != odd.data_ptr())
              << "\n";
    Refused("unknown name", [&] { tvm_partial::Rebind(pm, "main", {{ffi::String("z"), b}}); });
    Refused("twice", [&] { tvm_partial::Rebind(pm, "main", {{ffi::String("b"), b}, {1, b}}); });
    Refused("not bound", [&] { tvm_partial::Rebind(pm, "main", {{0, b}}); });
    Refused("other function", [&] { tvm_partial::Rebind(pm, "other", {{1, b}}); });
    Refused("plain", [&] {
      tvm_partial::Rebind(ffi::Module::LoadFromFile(std::filesystem::absolute(argv[4]).string()),
                          "main", {{ffi::String("b"), b}});
    });
    Refused("onnx", [&] { tvm_partial::Inspect(argv[3]); });
    Refused("missing", [&] { tvm_partial::Verify(artifact + ".gone"); });
  } catch (const ffi::Error& err) {
    std::cerr << err.kind() << ": " << err.message() << "\n";
    return 2;
  }
  return 0;
}
