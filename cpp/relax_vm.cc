// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file relax_vm.cc
 * \brief The `partial_apply_vm` module kind: a Relax VM executable (its first import, so
 *        export_library saves it and its kernels) plus its VirtualMachine's devices and allocators,
 *        so a partial module over a Relax model serialises (a `relax.VirtualMachine` does not).
 *        Bytes: "TVMPAVM1" | u32 count (1..8) | (i32 type, i32 id, i32 allocator)* | model record.
 *
 * The VM is made on first GetFunction. Initialising it changes its executable (TVM records a memory
 * scope per constant, logged by saves and loads): a VM over an executable made here runs on a copy.
 */
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/shape.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/json.h>
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

#include "device.h"
#include "format/hash.h"
#include "format/model_record.h"
#include "partial_module.h"
#include "registry.h"

namespace tvm_partial {
namespace {

constexpr const char kVMKind[] = "partial_apply_vm";
constexpr const char kVMMagic[] = "TVMPAVM1";  // 8 bytes, no terminator written
constexpr uint32_t kMaxDevices = 8;
constexpr int32_t kMaxDeviceType = 17;  // kDLMAIA in DLPack 1.1

struct VMDevice {
  int32_t type;
  int32_t id;
  int32_t allocator;
};

// Returns the model record, in executables models.py's from_exported_program / from_onnx made.
constexpr const char kRecordFunction[] = "__tvm_partial_model__";

struct VMRecord {
  std::vector<VMDevice> devices;
  ModelRecord model;
};

using Tensors = ffi::Map<ffi::String, ffi::Tensor>;

template <typename T>
T Entry(const ffi::Map<ffi::String, ffi::Any>& desc, const char* key) {
  return desc.Get(key).value_or(T()).template cast<T>();
}

// A copy of the Relax executable `exe` from its bytes, with the same imports (kernels).
ffi::Module CopyExecutable(const ffi::Module& exe, const ffi::Bytes& bytes) {
  static const ffi::Function load =
      ffi::Function::GetGlobalRequired("ffi.Module.load_from_bytes.relax.VMExecutable");
  ffi::Module copy = load(bytes).cast<ffi::Module>();
  for (const ffi::Any& import : exe->imports()) copy->ImportModule(import.cast<ffi::Module>());
  return copy;
}

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
      : record_(std::move(record)) {
    if (executable.has_value()) imports_.push_back(*executable);
  }

  const char* kind() const final { return kVMKind; }

  int GetPropertyMask() const final {
    return ffi::Module::kBinarySerializable | ffi::Module::kRunnable;
  }

  ffi::Optional<ffi::Function> GetFunction(const ffi::String& name) final {
    return VM()->GetFunction(name, /*query_imports=*/false);
  }

  ffi::Bytes SaveToBytes() const final {
    std::string out(kVMMagic, 8);
    auto put = [&out](uint32_t v) {
      for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    put(static_cast<uint32_t>(record_.devices.size()));
    for (const VMDevice& d : record_.devices) {
      for (int32_t v : {d.type, d.id, d.allocator}) put(static_cast<uint32_t>(v));
    }
    WriteModelRecord(record_.model, &out);
    return ffi::Bytes(out);
  }

  static ffi::Module LoadFromBytes(const ffi::Bytes& bytes) {
    return ffi::Module(ffi::make_object<RelaxVMModuleObj>(ParseRecord(bytes), std::nullopt));
  }

  // Run on `device` where the record names its type (a rank's GPU); false once the VM exists.
  bool Retarget(DLDevice device) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (vm_.has_value()) return false;
    for (VMDevice& d : record_.devices) {
      if (d.type == device.device_type) d.id = device.device_id;
    }
    return true;
  }

  static VMRecord ParseRecord(const ffi::Bytes& bytes) {
    const char* who = "partial_apply_vm loader";
    const size_t size = bytes.size();
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
    if (size < 12 || std::memcmp(p, kVMMagic, 8) != 0) {
      TVM_FFI_THROW(ValueError) << who << ": not a partial_apply_vm record (" << size
                                << " bytes, magic mismatch or truncated)";
    }
    size_t at = 8;
    auto next = [p, &at] {  // a little-endian u32, as i32
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[at++]) << (8 * i);
      return static_cast<int32_t>(v);
    };
    const auto count = static_cast<uint32_t>(next());
    if (count == 0 || count > kMaxDevices || size < 12 + static_cast<size_t>(count) * 12) {
      TVM_FFI_THROW(ValueError) << who << ": record of " << size << " bytes for " << count
                                << " devices (expected 1 to " << kMaxDevices << ", 12 bytes each)";
    }
    VMRecord record;
    for (uint32_t i = 0; i < count; ++i) record.devices.push_back({next(), next(), next()});
    CheckDevices(record.devices, who);
    record.model = ReadModelRecord(p, size, &at, who);
    if (at != size) {
      TVM_FFI_THROW(ValueError) << who << ": " << (size - at) << " unread bytes after the record";
    }
    return record;
  }

  // The executable's model record (kRecordFunction), if any: JSON, then the compiled-in tensors.
  void ReadRecordFunction(const char* who) {
    ffi::Module exe = imports_[0].cast<ffi::Module>();
    ffi::Module probe = (*exe->GetFunction("vm_load_executable", false))().cast<ffi::Module>();
    if (!probe->ImplementsFunction(kRecordFunction)) return;
    ffi::Array<ffi::Any> found =
        (*VM()->GetFunction(kRecordFunction, false))().cast<ffi::Array<ffi::Any>>();
    auto bad = [who](const std::string& what) {
      TVM_FFI_THROW(ValueError) << who << ": the executable's model record " << what
                                << "; import the model again with "
                                   "tvm_partial.from_exported_program or from_onnx";
    };
    if (found.empty()) bad("is empty");
    auto text = found[0].try_cast<ffi::String>();
    if (!text.has_value()) bad("does not start with its JSON");
    auto json = ffi::json::Parse(*text).try_cast<ffi::json::Object>();
    if (!json.has_value()) bad("is not a JSON object");
    record_.model.what = "the model";
    auto compiled =
        json->Get("compiled_in").value_or(ffi::json::Array()).try_cast<ffi::json::Array>();
    if (!compiled.has_value() || compiled->size() + 1 != found.size())
      bad("names other tensors than it holds");
    for (size_t i = 0; i < compiled->size(); ++i) {
      auto name = (*compiled)[i].try_cast<ffi::String>();
      auto tensor = found[i + 1].try_cast<ffi::Tensor>();
      if (!name.has_value() || !tensor.has_value())
        bad("holds a compiled-in entry that is not a named tensor");
      record_.model.compiled_in.push_back(RecordCompiledIn(*name, *tensor));
    }
    auto read =
        json->Get("read_at_import").value_or(ffi::json::Array()).try_cast<ffi::json::Array>();
    if (!read.has_value()) bad("names values read at import in something other than a list");
    for (const ffi::Any& name : *read) {
      for (CompiledIn& c : record_.model.compiled_in) {
        if (name.try_cast<ffi::String>() == ffi::String(c.name)) c.kind = CompiledIn::kRead;
      }
    }
    auto aliases = json->Get("aliases").value_or(ffi::json::Object()).try_cast<ffi::json::Object>();
    if (!aliases.has_value()) bad("has aliases that are not an object");
    for (const auto& [alias, name] : *aliases) {
      auto a = alias.try_cast<ffi::String>();
      auto n = name.try_cast<ffi::String>();
      if (!a.has_value() || !n.has_value()) bad("has an alias that is not a name");
      std::vector<std::string>* group = nullptr;
      for (auto& g : record_.model.ties) group = g[0] == std::string(*n) ? &g : group;
      if (group == nullptr) group = &record_.model.ties.emplace_back(std::vector<std::string>{*n});
      group->push_back(*a);
    }
  }

 private:
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
    // One loaded from a library is never serialised again (an update copies its file).
    const ffi::Array<ffi::Any>& imports = exe->imports();
    if (load.has_value() && std::none_of(imports.begin(), imports.end(), [](const ffi::Any& m) {
          return std::strcmp(m.cast<ffi::Module>()->kind(), "library") == 0;
        })) {
      load = CopyExecutable(exe, exe->SaveToBytes())->GetFunction("vm_load_executable", false);
    }
    if (!load.has_value()) {
      TVM_FFI_THROW(TypeError) << "partial_apply_vm: the wrapped module (" << exe->kind()
                               << ") is not a Relax VM executable";
    }
    ffi::Optional<ffi::Function> exists = ffi::Function::GetGlobal("runtime.GetDeviceAttr");
    std::vector<ffi::AnyView> init_args;  // integers, held by value
    for (const VMDevice& d : record_.devices) {
      if (d.type != kDLCPU && exists.has_value()) {
        int64_t present = 0;  // stays 0 when the query fails
        try {
          present = (*exists)(d.type, d.id, 0 /* kExist */).cast<int64_t>();
        } catch (const ffi::Error&) {
        }
        if (!present) {
          TVM_FFI_THROW(RuntimeError)
              << "partial_apply_vm: this Relax model runs on " << detail::DeviceString(d.type, d.id)
              << ", which is not present here (no such device, or TVM was built without its "
                 "runtime); load the artifact where that device is, or bind and export the model "
                 "again for a device this machine has";
        }
      }
      for (int32_t v : {d.type, d.id, d.allocator}) init_args.push_back(ffi::AnyView(int64_t{v}));
    }
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

  VMRecord record_;  // devices fixed once the VM exists (Retarget only before)
  std::mutex mutex_;
  ffi::Optional<ffi::Module> vm_;
};

// A VM module over `executable` on `devices` recording `program` (signature=: programs.py), else
// the executable's own record. The program's compiled-in tensors must be among its constants; with
// "copy" (TVM's torch frontend aliases the model's buffers) it runs and exports a copy made now.
ffi::Module MakeRelaxVMModule(ffi::Module executable, ffi::Array<ffi::Array<int64_t>> devices,
                              ffi::Optional<ffi::Map<ffi::String, ffi::Any>> program) {
  const char* who = "tvm_partial.BindModel";
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
  if (!program.has_value()) {
    auto module = ffi::make_object<RelaxVMModuleObj>(std::move(record), executable);
    module->ReadRecordFunction(who);
    return ffi::Module(module);
  }
  const ffi::Map<ffi::String, ffi::Any> desc = *program;
  ModelRecord& model = record.model;
  model.what = desc.Get("what").value_or(ffi::String("the program")).cast<ffi::String>();
  const auto kinds = Entry<ffi::Map<ffi::String, int64_t>>(desc, "kinds");
  for (const auto& [name, tensor] : Entry<Tensors>(desc, "compiled_in")) {
    model.compiled_in.push_back(RecordCompiledIn(name, tensor));
    model.compiled_in.back().kind = static_cast<CompiledIn::Kind>(kinds.Get(name).value_or(0));
  }
  std::sort(model.compiled_in.begin(), model.compiled_in.end(),
            [](const CompiledIn& a, const CompiledIn& b) { return a.name < b.name; });
  for (const auto& group : Entry<ffi::Array<ffi::Array<ffi::String>>>(desc, "ties")) {
    model.ties.emplace_back(group.begin(), group.end());
  }
  // One serialisation of the executable proves what it holds and, where asked, copies it.
  const ffi::Bytes bytes = executable->SaveToBytes();
  std::vector<CompiledIn> held;
  for (const CompiledIn& c : model.compiled_in) {
    if (c.kind == CompiledIn::kCompiled) held.push_back(c);
  }
  std::string missing;
  if (!BytesHoldTensor(bytes, held, &missing)) {
    const CompiledIn& c = *model.Find(missing);
    TVM_FFI_THROW(ValueError)
        << model.what << "'s '" << missing << "' (" << ffi::DLDataTypeToString(c.dtype)
        << ffi::Shape(c.shape) << ") is not among the constants the executable holds: signature= "
        << "must be the program the executable was imported from, unchanged since (torch.export "
        << "shares the model's tensors, so model.load_state_dict() or a training step after "
        << "export changes the program too); import and compile the model again, or pass the "
        << "program that was imported";
  }
  if (desc.Get("copy").value_or(false).cast<bool>()) executable = CopyExecutable(executable, bytes);
  return ffi::Module(ffi::make_object<RelaxVMModuleObj>(std::move(record), executable));
}

// tvm_partial.BindModel: `target` (made a VM module when `devices` are given), `given` settled
// against its record (SettleNames) -> {"module", "names": {parameter: the given name it takes}}.
ffi::Map<ffi::String, ffi::Any> BindModel(ffi::Module target,
                                          ffi::Optional<ffi::Array<ffi::Array<int64_t>>> devices,
                                          ffi::Optional<ffi::Map<ffi::String, ffi::Any>> program,
                                          ffi::Array<ffi::String> params,
                                          ffi::Map<ffi::String, ffi::Any> given) {
  const ffi::Module module =
      devices.has_value() ? MakeRelaxVMModule(target, *devices, program) : target;
  const Tensors sources = program.has_value() ? Entry<Tensors>(*program, "compiled_in") : Tensors();
  ffi::Map<ffi::String, ffi::String> names =
      SettleNames(detail::ModelRecordOf(module),
                  std::vector<std::string>(params.begin(), params.end()), given, sources);
  return ffi::Map<ffi::String, ffi::Any>{{"module", module}, {"names", names}};
}

}  // namespace

namespace detail {

void RetargetRelaxVM(const ffi::Module& mod, DLDevice device) {
  // The kind compared by address (as in AsPartialModule): another copy's VM keeps its devices.
  if (device.device_type == kDLCPU || mod->kind() != kVMKind) return;
  auto* vm = static_cast<RelaxVMModuleObj*>(const_cast<ffi::ModuleObj*>(mod.operator->()));
  if (!vm->Retarget(device)) {
    TVM_FFI_THROW(RuntimeError) << "partial_apply_vm: its VirtualMachine already runs; a rank's "
                                   "device is set when the artifact is loaded";
  }
}

ModelRecord ModelRecordOf(const ffi::Module& mod) {
  const std::string kind = mod->kind();
  if (kind == kVMKind) return RelaxVMModuleObj::ParseRecord(mod->SaveToBytes()).model;
  if (kind == "partial_apply" && !mod->imports().empty()) {
    return ModelRecordOf(mod->imports()[0].cast<ffi::Module>());
  }
  return {};
}

ffi::Map<ffi::String, ffi::Any> DescribeVMRecord(const ffi::Bytes& bytes) {
  static const char* kKinds[] = {"compiled", "unused", "pinned", "read at import"};
  const VMRecord record = RelaxVMModuleObj::ParseRecord(bytes);
  ffi::Array<ffi::String> devices, allocators;
  for (const VMDevice& d : record.devices) {
    devices.push_back(detail::DeviceString(d.type, d.id));
    allocators.push_back(d.allocator == 1 ? "naive" : "pooled");  // CheckDevices: 1 or 2
  }
  ffi::Array<ffi::Any> compiled;
  for (const CompiledIn& c : record.model.compiled_in) {
    compiled.push_back(ffi::Map<ffi::String, ffi::Any>{
        {"name", ffi::String(c.name)},
        {"dtype", ffi::DLDataTypeToString(c.dtype)},
        {"shape", ffi::Array<int64_t>(c.shape.begin(), c.shape.end())},
        {"hash", ffi::String(hash::HashHex(c.hash))},
        {"kind", ffi::String(kKinds[c.kind])}});
  }
  ffi::Array<ffi::Array<ffi::String>> ties;
  for (const auto& group : record.model.ties) {
    ffi::Array<ffi::String> names;
    for (const std::string& n : group) names.push_back(n);
    ties.push_back(names);
  }
  return {
      {"devices", devices}, {"allocators", allocators}, {"compiled_in", compiled}, {"ties", ties}};
}

}  // namespace detail

TVM_FFI_STATIC_INIT_BLOCK() {
  detail::RegisterGlobalOnce("tvm_partial.BindModel", BindModel);
  detail::RegisterGlobalOnce("ffi.Module.load_from_bytes.partial_apply_vm",
                             RelaxVMModuleObj::LoadFromBytes);
}

}  // namespace tvm_partial
