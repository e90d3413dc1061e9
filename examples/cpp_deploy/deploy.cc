// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
// Runs the conv2d + bias kernel of `tvm-partial demo` (tvm_partial._fixtures) from C++, with its
// weights and bias bound.
//
//   deploy ARTIFACT.so DATA.bin EXPECTED.bin
//       ARTIFACT.so was exported by tvm_partial.export_library: the constants are inside, so
//       main(data, result) takes the data alone.
//   deploy --bind LIBRARY.so WEIGHTS.bin BIAS.bin DATA.bin EXPECTED.bin
//       LIBRARY.so is plain compiled code, main(data, weights, bias, result): bind here, then call.
//   deploy --returns ARTIFACT.so DATA.bin EXPECTED.bin
//       ARTIFACT.so was exported with outputs="result": `auto out = main(data)` returns the result.
//   deploy --bind-returns LIBRARY.so WEIGHTS.bin BIAS.bin DATA.bin EXPECTED.bin
//       As --bind, and `result` is made an output here: the partial allocates and returns it.
//   deploy --weights ARTIFACT.so WEIGHTS.safetensors DATA.bin EXPECTED.bin
//       As the first form, with the tensors of WEIGHTS.safetensors bound instead of the artifact's
//       (tvm_partial::LoadWithWeights; written by tvm_partial.save_weights): new weights for the
//       same code. The artifact's own weights file, if it was exported with one, is not opened.
//   deploy --rebind ARTIFACT.so WEIGHTS.safetensors DATA.bin EXPECTED.bin
//       The verbs of the Python API from C++: the artifact verified (tvm_partial::Verify), its
//       partial module rebound to the tensors of WEIGHTS.safetensors by parameter name
//       (tvm_partial::Rebind of tvm_partial::OpenWeights), then called.
//   deploy --relax ARTIFACT.so X.bin EXPECTED.bin
//       ARTIFACT.so is a Relax model (an MLP, x: (2, 8) -> (2, 4)) exported with its weights:
//       its VirtualMachine is created on first use, and `auto y = main(x)` returns the result.
//   deploy --device cuda MODE...
//       Any of the above for an artifact bound on cuda:0 (run.py --device cuda): the data (and,
//       for --bind, the weights) go to the GPU, the result comes back to be compared.
//
// The .bin files hold raw float32 values in the shapes below (run.py writes them). Exit status:
// 0 when the result equals EXPECTED.bin bit for bit, 1 when it differs, 2 on any error.
// Built as `deploy` (links libtvm_partial, which registers the loader of every tvm-partial
// artifact) and as `deploy_ffi_only` (DEPLOY_FFI_ONLY: links no tvm-partial, so it loads only
// self-contained artifacts, and has no --bind).
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#ifndef DEPLOY_FFI_ONLY
#include <tvm_partial/partial_apply.h>
#endif

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace ffi = tvm::ffi;

// tvm_partial._fixtures.SHAPES
const std::vector<int64_t> kData{1, 3, 32, 32}, kWeights{8, 3, 3, 3}, kBias{8},
    kResult{1, 8, 30, 30};
// run.py's Relax MLP
const std::vector<int64_t> kRelaxX{2, 8}, kRelaxY{2, 4};

// TVM kernels assume 64-byte-aligned data and crash on less.
ffi::Tensor Empty(const std::vector<int64_t>& shape) {
  const DLDataType f32{kDLFloat, 32, 1};
  const DLDevice cpu{kDLCPU, 0};
#ifndef DEPLOY_FFI_ONLY
  return tvm_partial::AlignedEmpty(ffi::Shape(shape), f32, cpu);
#else
  auto alloc = ffi::Function::GetGlobal("runtime.TVMTensorAllocWithScope");  // libtvm_runtime's
  if (!alloc) TVM_FFI_THROW(RuntimeError) << "libtvm_runtime is not loaded";
  return (*alloc)(ffi::Shape(shape), f32, cpu, nullptr).cast<ffi::Tensor>();
#endif
}

// Where the tensors the program passes live: the CPU, or cuda:0 with --device cuda.
DLDevice device{kDLCPU, 0};

ffi::Function RuntimeGlobal(const char* name) {  // libtvm_runtime's
  auto f = ffi::Function::GetGlobal(name);
  if (!f) TVM_FFI_THROW(RuntimeError) << name << " is not registered: libtvm_runtime is not loaded";
  return *f;
}

// `from` copied into a new tensor like it on `to` (waited for).
ffi::Tensor CopyTo(const ffi::Tensor& from, DLDevice to) {
  const DLDevice at = from.device();
  if (at.device_type == to.device_type && at.device_id == to.device_id) return from;
  auto alloc = RuntimeGlobal("runtime.TVMTensorAllocWithScope");
  ffi::Tensor out = alloc(ffi::Shape(from.shape()), from.dtype(), to, nullptr).cast<ffi::Tensor>();
  RuntimeGlobal("runtime.TVMTensorCopyFromTo")(from, out);
  RuntimeGlobal("runtime.Device_StreamSync")(to.device_type == kDLCPU ? at : to, 0);
  return out;
}

ffi::Tensor ReadHost(const std::string& path, const std::vector<int64_t>& shape) {
  ffi::Tensor tensor = Empty(shape);
  const size_t nbytes = ffi::GetDataSize(*tensor.GetDLTensorPtr());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || static_cast<size_t>(in.tellg()) != nbytes) {
    TVM_FFI_THROW(ValueError) << path << ": expected " << nbytes << " bytes of float32";
  }
  in.seekg(0).read(static_cast<char*>(tensor.data_ptr()), nbytes);
  return tensor;
}

// An input: read, and on `device`.
ffi::Tensor Read(const std::string& path, const std::vector<int64_t>& shape) {
  return CopyTo(ReadHost(path, shape), device);
}

ffi::Function LoadMain(const char* path) {
  // dlopen searches the library path for a bare file name: pass a path.
  ffi::Module library = ffi::Module::LoadFromFile(std::filesystem::absolute(path).string());
  if (auto main = library->GetFunction("main", /*query_imports=*/true)) return *main;
  TVM_FFI_THROW(AttributeError) << path << " has no function main";
  TVM_FFI_UNREACHABLE();
}

int main(int argc, char** argv) {
  try {
    if (argc > 2 && std::string(argv[1]) == "--device" && std::string(argv[2]) == "cuda") {
      device = DLDevice{kDLCUDA, 0};
      argv[2] = argv[0];  // the mode's arguments follow as without the option
      argc -= 2;
      argv += 2;
    }
    ffi::Tensor result = CopyTo(Empty(kResult), device);
    std::string expected;
    std::vector<int64_t> result_shape = kResult;
    if (argc == 5 && std::string(argv[1]) == "--relax") {
      result = LoadMain(argv[2])(Read(argv[3], kRelaxX)).cast<ffi::Tensor>();  // the VM's output
      result_shape = kRelaxY;
      expected = argv[4];
    } else if (argc == 4) {
      LoadMain(argv[1])(Read(argv[2], kData), result);
      expected = argv[3];
    } else if (argc == 5 && std::string(argv[1]) == "--returns") {
      auto out = LoadMain(argv[2])(Read(argv[3], kData)).cast<ffi::Tensor>();  // allocated per call
      result = out;
      expected = argv[4];
#ifndef DEPLOY_FFI_ONLY
    } else if (argc == 6 && std::string(argv[1]) == "--weights") {
      const std::string path = std::filesystem::absolute(argv[2]).string();
      ffi::Module library = tvm_partial::LoadWithWeights(path, argv[3]);
      auto main = library->GetFunction("main", /*query_imports=*/true);
      if (!main) TVM_FFI_THROW(AttributeError) << argv[2] << " has no function main";
      (*main)(Read(argv[4], kData), result);
      expected = argv[5];
    } else if (argc == 6 && std::string(argv[1]) == "--rebind") {
      const std::string path = std::filesystem::absolute(argv[2]).string();
      const auto report = tvm_partial::Verify(path);
      if (!report.at("intact").cast<bool>()) TVM_FFI_THROW(ValueError) << argv[2] << " is damaged";
      std::cout << "verify: " << report.at("checked").cast<int64_t>() << " payloads intact\n";
      ffi::Map<ffi::Any, ffi::Any> values;  // {"weights": ..., "bias": ...}, where the module runs
      for (const auto& [name, tensor] : tvm_partial::OpenWeights(argv[3])) {
        values.Set(name, CopyTo(tensor.cast<ffi::Tensor>(), device));
      }
      // The loaded module is the partial module: TVM makes the first embedded module the root.
      ffi::Module pm = tvm_partial::Rebind(ffi::Module::LoadFromFile(path), "main", values);
      pm->GetFunction("main").value()(Read(argv[4], kData), result);
      expected = argv[5];
    } else if (argc == 7 && std::string(argv[1]) == "--bind") {
      ffi::Function conv = tvm_partial::PartialApply(
          LoadMain(argv[2]), {{1, Read(argv[3], kWeights)}, {2, Read(argv[4], kBias)}}, "main",
          {"data", "weights", "bias", "result"});
      conv(Read(argv[5], kData), result);  // = main(data, weights, bias, result)
      expected = argv[6];
    } else if (argc == 7 && std::string(argv[1]) == "--bind-returns") {
      std::vector<tvm_partial::OutputDim> dims;
      for (int64_t extent : kResult) dims.push_back(tvm_partial::OutputDim::Static(extent));
      ffi::Function conv = tvm_partial::PartialApply(
          LoadMain(argv[2]), {{1, Read(argv[3], kWeights)}, {2, Read(argv[4], kBias)}}, "main",
          {"data", "weights", "bias", "result"}, {{3, DLDataType{kDLFloat, 32, 1}, dims}});
      result = conv(Read(argv[5], kData)).cast<ffi::Tensor>();  // = main(data, w, b, <new>)
      expected = argv[6];
#endif
    } else {
      std::cerr << "usage: " << argv[0] << " ARTIFACT.so DATA.bin EXPECTED.bin\n"
                << "       " << argv[0] << " --returns ARTIFACT.so DATA.bin EXPECTED.bin\n"
                << "       " << argv[0] << " --relax ARTIFACT.so X.bin EXPECTED.bin\n"
#ifndef DEPLOY_FFI_ONLY
                << "       " << argv[0]
                << " --weights ARTIFACT.so WEIGHTS.safetensors DATA.bin EXPECTED.bin\n"
                << "       " << argv[0]
                << " --rebind ARTIFACT.so WEIGHTS.safetensors DATA.bin EXPECTED.bin\n"
                << "       " << argv[0]
                << " --bind LIBRARY.so WEIGHTS.bin BIAS.bin DATA.bin EXPECTED.bin\n"
                << "       " << argv[0]
                << " --bind-returns LIBRARY.so WEIGHTS.bin BIAS.bin DATA.bin EXPECTED.bin\n"
#endif
                << "  (--device cuda before any of these: the same on cuda:0)\n";
      return 2;
    }
    const bool aligned = reinterpret_cast<uintptr_t>(result.data_ptr()) % 64 == 0;
    result = CopyTo(result, DLDevice{kDLCPU, 0});
    ffi::Tensor want = ReadHost(expected, result_shape);
    const size_t nbytes = ffi::GetDataSize(*result.GetDLTensorPtr());
    if (nbytes != ffi::GetDataSize(*want.GetDLTensorPtr()) || !aligned) {
      std::cout << "MISMATCH: the result has " << nbytes << " bytes or is not 64-byte aligned\n";
      return 1;
    }
    if (std::memcmp(result.data_ptr(), want.data_ptr(), nbytes) != 0) {
      std::cout << "MISMATCH: the result differs from " << expected << "\n";
      return 1;
    }
    std::cout << "OK: " << nbytes / 4 << " float32 values equal " << expected << " bitwise\n";
    return 0;
  } catch (const ffi::Error& err) {
    std::cerr << err.kind() << ": " << err.message() << "\n";
    return 2;
  }
}
