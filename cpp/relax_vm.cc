// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file relax_vm.cc
 * \brief The `partial_apply_vm` module kind: a Relax VM executable together with the device(s) and
 *        allocator(s) its VirtualMachine runs with, so that a partial module over a Relax model
 *        serialises (a `relax.VirtualMachine` module does not) and runs after loading.
 *
 * The executable is the module's first import, so `export_library` saves it (and the kernels it
 * imports) in the import tree as usual; this module's own bytes record the devices and what a
 * frontend compiled into the executable (compiled_in.h):
 *
 *   "TVMPAVM1" | u32 device count (1..8) | per device: i32 device type | i32 device id
 *              | i32 allocator (1 naive, 2 pooled)
 *              | compiled-in records (compiled_in.h: u32 count, then name, dtype, shape, hash)
 *
 * The VirtualMachine is created on first use (the first `GetFunction`), not at load, and the
 * functions it returns are the VM's own: a partial module binding `main` wraps `vm["main"]`.
 */
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/module.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/memory.h>
#include <tvm/ffi/string.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "compiled_in.h"
#include "device.h"
#include "registry.h"

namespace tvm_partial {
namespace {

namespace ffi = ::tvm::ffi;

constexpr const char kVMKind[] = "partial_apply_vm";
constexpr const char kVMMagic[] = "TVMPAVM1";  // 8 bytes, no terminator written
constexpr uint32_t kMaxDevices = 8;
/*! \brief The largest DLDeviceType value (kDLMAIA in DLPack 1.1). */
constexpr int32_t kMaxDeviceType = 17;
/*! \brief GetFunction(kConfigName) returns the recorded devices: [[type, id, allocator], ...]. */
constexpr const char kConfigName[] = "__tvm_partial_vm_devices";

struct VMDevice {
  int32_t type;
  int32_t id;
  int32_t allocator;
};

/*! \brief What a module's bytes record. */
struct VMRecord {
  std::vector<VMDevice> devices;
  std::vector<CompiledIn> compiled_in;
};

void CheckDevices(const std::vector<VMDevice>& devices, const char* who) {
  if (devices.empty() || devices.size() > kMaxDevices) {
    TVM_FFI_THROW(ValueError) << who << ": a VirtualMachine needs 1 to " << kMaxDevices
                              << " devices, got " << devices.size();
  }
  for (const VMDevice& d : devices) {
    if (d.type < 1 || d.type > kMaxDeviceType || d.id < 0 ||
        (d.allocator != 1 && d.allocator != 2)) {
      TVM_FFI_THROW(ValueError) << who << ": bad device record (type " << d.type << ", id " << d.id
                                << ", allocator " << d.allocator
                                << "); device types are DLPack's (1 to " << kMaxDeviceType
                                << "), ids >= 0, allocators 1 (naive) or 2 (pooled)";
    }
  }
}

class RelaxVMModuleObj final : public ffi::ModuleObj {
 public:
  RelaxVMModuleObj(VMRecord record, ffi::Optional<ffi::Module> executable)
      : devices_(std::move(record.devices)), compiled_in_(std::move(record.compiled_in)) {
    if (executable.has_value()) imports_.push_back(*executable);
  }

  const char* kind() const final { return kVMKind; }

  int GetPropertyMask() const final {
    return ffi::Module::kBinarySerializable | ffi::Module::kRunnable;
  }

  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    if (name == kConfigName) {
      ffi::Array<ffi::Array<int64_t>> out;
      for (const VMDevice& d : devices_) out.push_back({d.type, d.id, d.allocator});
      return ffi::Function::FromTyped([out]() { return out; });
    }
    return VM()->GetFunction(name, /*query_imports=*/false);
  }

  ffi::Bytes SaveToBytes() const final {
    std::string out(kVMMagic, 8);
    auto put = [&out](uint32_t v) {
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    put(static_cast<uint32_t>(devices_.size()));
    for (const VMDevice& d : devices_) {
      put(static_cast<uint32_t>(d.type));
      put(static_cast<uint32_t>(d.id));
      put(static_cast<uint32_t>(d.allocator));
    }
    WriteCompiledIn(compiled_in_, &out);
    return ffi::Bytes(out);
  }

  static ffi::Module LoadFromBytes(const ffi::Bytes& bytes) {
    return ffi::Module(ffi::make_object<RelaxVMModuleObj>(ParseRecord(bytes), std::nullopt));
  }

  /*! \brief Run on `device` where the record names a device of its type (a rank's GPU), before
   *         the VirtualMachine is created. False once it exists (it keeps its devices). */
  bool Retarget(DLDevice device) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (vm_.has_value()) return false;
    for (VMDevice& d : devices_) {
      if (d.type == device.device_type) d.id = device.device_id;
    }
    return true;
  }

  /*! \brief What a record (this module's bytes) names, checked. */
  static VMRecord ParseRecord(const ffi::Bytes& bytes) {
    const char* who = "partial_apply_vm loader";
    const size_t size = bytes.size();
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
    if (size < 12 || std::memcmp(p, kVMMagic, 8) != 0) {
      TVM_FFI_THROW(ValueError) << who << ": not a partial_apply_vm record (" << size
                                << " bytes, magic mismatch or truncated)";
    }
    auto get = [p](size_t at) {
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[at + i]) << (8 * i);
      return v;
    };
    const uint32_t count = get(8);
    if (count == 0 || count > kMaxDevices || size < 12 + static_cast<size_t>(count) * 12) {
      TVM_FFI_THROW(ValueError) << who << ": record of " << size << " bytes for " << count
                                << " devices (expected 1 to " << kMaxDevices << ", 12 bytes each)";
    }
    VMRecord record;
    for (uint32_t i = 0; i < count; ++i) {
      const size_t at = 12 + 12 * static_cast<size_t>(i);
      record.devices.push_back({static_cast<int32_t>(get(at)), static_cast<int32_t>(get(at + 4)),
                                static_cast<int32_t>(get(at + 8))});
    }
    CheckDevices(record.devices, who);
    size_t at = 12 + static_cast<size_t>(count) * 12;
    record.compiled_in = ReadCompiledIn(p, size, &at, who);
    if (at != size) {
      TVM_FFI_THROW(ValueError) << who << ": " << (size - at) << " unread bytes after the record";
    }
    return record;
  }

  const std::vector<CompiledIn>& compiled_in() const { return compiled_in_; }

 private:
  /*! \brief The VirtualMachine, created and initialised on first use. */
  ffi::Module VM() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (vm_.has_value()) return *vm_;
    if (imports_.empty()) {
      TVM_FFI_THROW(RuntimeError) << "partial_apply_vm: no Relax executable to run (the module was "
                                     "restored from bytes alone)";
    }
    ffi::Module exe = imports_[0].cast<ffi::Module>();
    ffi::Optional<ffi::Function> load =
        exe->GetFunction("vm_load_executable", /*query_imports=*/false);
    if (!load.has_value()) {
      TVM_FFI_THROW(TypeError) << "partial_apply_vm: the wrapped module (" << exe->kind()
                               << ") is not a Relax VM executable";
    }
    ffi::Optional<ffi::Function> exists = ffi::Function::GetGlobal("runtime.GetDeviceAttr");
    std::vector<ffi::AnyView> init_args;
    std::vector<ffi::Any> keep;
    for (const VMDevice& d : devices_) {
      if (d.type != kDLCPU && exists.has_value()) {
        int64_t present = 0;
        try {
          present = (*exists)(d.type, d.id, 0 /* kExist */).cast<int64_t>();
        } catch (const ffi::Error&) {
          present = 0;
        }
        if (!present) {
          TVM_FFI_THROW(RuntimeError)
              << "partial_apply_vm: this Relax model runs on " << detail::DeviceString(d.type, d.id)
              << ", which is not present here (no such device, or TVM was built without its "
                 "runtime); load the artifact where that device is, or bind and export the model "
                 "again for a device this machine has";
        }
      }
      keep.push_back(ffi::Any(static_cast<int64_t>(d.type)));
      keep.push_back(ffi::Any(static_cast<int64_t>(d.id)));
      keep.push_back(ffi::Any(static_cast<int64_t>(d.allocator)));
    }
    for (const ffi::Any& a : keep) init_args.push_back(a);
    ffi::Module vm = (*load)().cast<ffi::Module>();
    ffi::Optional<ffi::Function> init = vm->GetFunction("vm_initialization", false);
    if (!init.has_value()) {
      TVM_FFI_THROW(TypeError) << "partial_apply_vm: the VirtualMachine has no vm_initialization";
    }
    ffi::Any rv;
    (*init)->CallPacked(init_args.data(), static_cast<int32_t>(init_args.size()), &rv);
    vm_ = vm;
    return vm;
  }

  std::vector<VMDevice> devices_;        // fixed once the VM exists (Retarget only before)
  std::vector<CompiledIn> compiled_in_;  // what a frontend compiled into the executable, by name
  std::mutex mutex_;
  ffi::Optional<ffi::Module> vm_;
};

/*! \brief tvm_partial.RelaxVMModule(executable, [[type, id, allocator], ...], {name: tensor},
 *         [name, ...]): the tensors a frontend compiled into the executable, by the model's
 *         names, and which of them the code never reads. */
ffi::Module MakeRelaxVMModule(ffi::Module executable, ffi::Array<ffi::Array<int64_t>> devices,
                              ffi::Map<ffi::String, ffi::Tensor> compiled_in,
                              ffi::Array<ffi::String> unused) {
  const char* who = "tvm_partial.RelaxVMModule";
  if (!executable->GetFunction("vm_load_executable", false).has_value()) {
    TVM_FFI_THROW(TypeError) << who << ": expected a Relax VM executable (relax.VMExecutable), got "
                             << executable->kind();
  }
  VMRecord record;
  for (const ffi::Array<int64_t>& d : devices) {
    if (d.size() != 3) TVM_FFI_THROW(ValueError) << who << ": each device is [type, id, allocator]";
    record.devices.push_back(
        {static_cast<int32_t>(d[0]), static_cast<int32_t>(d[1]), static_cast<int32_t>(d[2])});
  }
  CheckDevices(record.devices, who);
  for (const auto& [name, tensor] : compiled_in) {
    record.compiled_in.push_back(RecordCompiledIn(name, tensor));
    for (const ffi::String& u : unused) record.compiled_in.back().unused |= u == name;
  }
  std::sort(record.compiled_in.begin(), record.compiled_in.end(),
            [](const CompiledIn& a, const CompiledIn& b) { return a.name < b.name; });
  return ffi::Module(ffi::make_object<RelaxVMModuleObj>(std::move(record), executable));
}

}  // namespace

namespace detail {

void RetargetRelaxVM(const ffi::Module& mod, DLDevice device) {
  // Ours when the kind is this copy's own string (its address, as AsPartialModule tells them):
  // a VM module of another copy of tvm-partial keeps its devices.
  if (device.device_type == kDLCPU || mod->kind() != kVMKind) return;
  auto* vm = static_cast<RelaxVMModuleObj*>(const_cast<ffi::ModuleObj*>(mod.operator->()));
  if (!vm->Retarget(device)) {
    TVM_FFI_THROW(RuntimeError) << "partial_apply_vm: its VirtualMachine already runs; a rank's "
                                   "device is set when the artifact is loaded";
  }
}

}  // namespace detail

std::vector<CompiledIn> CompiledInOf(const ffi::Module& mod) {
  // A VM module of any copy of tvm-partial says it in its bytes; a partial module over one, in
  // its wrapped module's.
  const std::string kind = mod->kind();
  if (kind == kVMKind) return RelaxVMModuleObj::ParseRecord(mod->SaveToBytes()).compiled_in;
  if (kind == "partial_apply" && !mod->imports().empty()) {
    return CompiledInOf(mod->imports()[0].cast<ffi::Module>());
  }
  return {};
}

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.RelaxVMModule", MakeRelaxVMModule);
  detail::RegisterGlobalOnce("ffi.Module.load_from_bytes.partial_apply_vm",
                             RelaxVMModuleObj::LoadFromBytes);
  // What a record names, for inspect (which reads an artifact without loading it), checked as
  // the loader checks it: {"devices": [[device ("cuda:0"), allocator], ...],
  // "compiled_in": [[name, dtype, shape, hash], ...]}.
  detail::RegisterGlobalOnce("tvm_partial.DescribeVMRecord", [](ffi::Bytes bytes) {
    const VMRecord record = RelaxVMModuleObj::ParseRecord(bytes);
    ffi::Array<ffi::Array<ffi::Any>> devices;
    for (const VMDevice& d : record.devices) {
      devices.push_back({ffi::String(detail::DeviceString(d.type, d.id)), d.allocator});
    }
    ffi::Array<ffi::Array<ffi::Any>> compiled;
    for (const CompiledIn& c : record.compiled_in) {
      compiled.push_back({ffi::String(c.name), ffi::String(ffi::DLDataTypeToString(c.dtype)),
                          ffi::Shape(c.shape), static_cast<int64_t>(c.hash), c.unused});
    }
    return ffi::Map<ffi::String, ffi::Any>{{"devices", devices}, {"compiled_in", compiled}};
  });
}

}  // namespace tvm_partial
