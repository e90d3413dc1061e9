// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file fuzz_weights.cc
 * \brief libFuzzer target: arbitrary bytes as a safetensors weights file, through the one reader
 *        of its header (`weights::Open`) and everything that trusts what it returns.
 *
 * Each input is written to a file and read the way every tool of tvm-partial reads one:
 *   - `weights::Open`, then the records in `__metadata__` (`RecordedHashes`, `RecordedBindings`)
 *     and every key (`ParseKey`);
 *   - `weights::Match` against a small fixed set of wanted bindings (a name bound in two
 *     functions, a position without a name), and `weights::CheckRegionFile` against the
 *     partial module of a fixed artifact exported with `weights_file=`;
 *   - the globals behind `inspect`, `verify` and `open_weights` (`tvm_partial.Inspect`,
 *     `Verify`, both as of a weights file and as of a file of any kind, and `OpenWeights`),
 *     every tensor they return read to its last byte;
 *   - `storage::Locate` and `MakeTensors` as the loader runs them for that artifact: with the
 *     input as the weights file it records (`tvm_partial.load(model.so)`) and as the file given
 *     to `load(model.so, weights_file=...)`, every tensor read to its last byte.
 * The fixed artifact is `weights_fuzz_artifact` of tests/helpers.py; fuzz/make_weights_seeds.py
 * writes its bytes, which the environment variable TVM_PARTIAL_FUZZ_ARTIFACT names (scripts/
 * fuzz.sh sets it), and seeds from real files (the safetensors package's, tvm-partial's).
 *
 * Mutation: libFuzzer's own, and one that keeps the file framed (it mutates the JSON header or
 * the data alone and writes the header's new length in front), so a mutated header is parsed
 * rather than refused as truncated; one mutation in eight is of the raw bytes, length included.
 *
 * Oracle: no crash, hang or sanitizer report; every refusal is an ffi::Error (anything else
 * escapes and ends the run); an accepted header keeps its promises (each entry inside the data,
 * its byte span equal to its shape times its dtype, no two overlapping, the data covered with no
 * hole), and accepted offsets lie inside the file.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/map.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "format/common.h"
#include "format/format.h"
#include "storage/file.h"
#include "storage/payload_source.h"
#include "storage/weights_file.h"

namespace ffi = tvm::ffi;
using namespace tvm_partial;  // NOLINT(build/namespaces): a test driver, one file

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "fuzz_weights: %s\n", what);
  std::abort();
}

/*! \brief What every input is checked against, made once. */
struct Fixture {
  std::string dir;    // a private temporary folder
  std::string input;  // dir/model.safetensors: each input is written here
  std::string blob;   // the fixed artifact's partial module, as its library embeds it
  format::Parsed parsed;
  storage::Origin own;       // what the loader has for that artifact: its file and path
  storage::Origin override;  // the same with the input given to load(..., weights_file=)
  ffi::Array<ffi::String> main_names{"x", "weight", "bias", "y"};
  ffi::Array<ffi::String> other_names{"x", "weight", "z"};
  std::vector<weights::Wanted> wanted;
  ffi::Function inspect, verify, open;
};

Fixture* Make() {
  auto* f = new Fixture();
  const char* artifact = std::getenv("TVM_PARTIAL_FUZZ_ARTIFACT");
  if (artifact == nullptr) {
    Fail("set TVM_PARTIAL_FUZZ_ARTIFACT to the file fuzz/make_weights_seeds.py writes");
  }
  std::ifstream in(artifact, std::ios::binary);
  f->blob.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  f->parsed = format::Parse(f->blob.data(), f->blob.size());
  if (f->parsed.placement != format::Placement::kWeightsFile ||
      f->parsed.weights_file != "model.safetensors") {
    Fail("TVM_PARTIAL_FUZZ_ARTIFACT is not the fixed artifact (weights file model.safetensors)");
  }
  // A memory file system where there is one: every input is a file written, and on a disk an
  // input truncated and rewritten is flushed at close, which slows the run threefold.
  const char* tmp = std::getenv("TMPDIR");
  const bool shm = access("/dev/shm", W_OK) == 0;
  std::string pattern =
      std::string(shm ? "/dev/shm" : (tmp && *tmp ? tmp : "/tmp")) + "/fuzz_weights_XXXXXX";
  if (mkdtemp(&pattern[0]) == nullptr) Fail("mkdtemp failed");
  f->dir = pattern;
  f->input = f->dir + "/model.safetensors";
  const std::string library = f->dir + "/model.so";  // stands for the library: only named
  std::fclose(std::fopen(library.c_str(), "w"));
  static const Fixture* made = f;
  std::atexit([] {
    unlink(made->input.c_str());
    unlink((made->dir + "/model.so").c_str());
    rmdir(made->dir.c_str());
  });
  f->own.blob = f->blob.data();
  f->own.library = storage::OpenRegular(library, "artifact");
  f->own.library_path = library;
  f->override.blob = f->blob.data();
  f->override.options.weights_file = f->input;
  // Bare `weight` names a parameter of both functions (ambiguous); other/5 has no name.
  // main/2 and other/7 are one tensor bound in two places (tied): the file supplies it once.
  f->wanted = {{{{"main", 1, &f->main_names}}, "float32", {4, 3}},
               {{{"main", 2, &f->main_names}, {"other", 7, &f->other_names}}, "float16", {3}},
               {{{"other", 1, &f->other_names}}, "float32", {4, 3}},
               {{{"other", 5, &f->other_names}}, "int8", {0}}};
  f->inspect = *ffi::Function::GetGlobal("tvm_partial.Inspect");
  f->verify = *ffi::Function::GetGlobal("tvm_partial.Verify");
  f->open = *ffi::Function::GetGlobal("tvm_partial.OpenWeights");
  return f;
}

const Fixture& Get() {
  static const Fixture* fixture = Make();
  return *fixture;
}

void WriteInput(const std::string& path, const uint8_t* data, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) Fail("cannot write the input file");
  for (size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) Fail("cannot write the input file");
    done += static_cast<size_t>(n);
  }
  close(fd);
}

volatile uint8_t sink;

/*! \brief Read every byte of a host tensor (a mapping that ends early faults here). */
void Touch(const ffi::Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  const size_t n = static_cast<size_t>(ffi::GetDataSize(*t.GetDLTensorPtr()));
  uint8_t acc = 0;
  for (size_t i = 0; i < n; ++i) acc ^= p[i];
  sink = acc;
}

/*! \brief What an accepted header promises. */
void CheckAccepted(const weights::WeightsFile& file, size_t size) {
  if (file.data_start < 8 || file.data_start > size || file.data_size != size - file.data_start) {
    Fail("accepted: data start or size does not add up to the file");
  }
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [key, e] : file.entries) {
    if (e.dtype == nullptr || e.begin > e.end || e.end > file.data_size) {
      Fail("accepted: an entry outside the data");
    }
    unsigned __int128 count = e.dtype->bits;  // bits, then bytes: F4 and F6 are packed
    for (int64_t d : e.shape) {
      if (d < 0) Fail("accepted: a negative dimension");
      count *= static_cast<uint64_t>(d);
      if (count > (static_cast<unsigned __int128>(1) << 70)) break;
    }
    if (count % 8 != 0) Fail("accepted: an entry of elements that do not fill whole bytes");
    if (count / 8 != e.end - e.begin) Fail("accepted: an entry whose span is not shape x dtype");
    if (e.end > e.begin) spans.emplace_back(e.begin, e.end);
  }
  std::sort(spans.begin(), spans.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : spans) {
    if (begin < covered) Fail("accepted: two entries overlap");
    if (begin > covered) Fail("accepted: a hole in the data no entry covers");
    covered = end;
  }
  if (covered != file.data_size) Fail("accepted: data after the last entry");
}

/*! \brief TVM_PARTIAL_FUZZ_VERBOSE=1: each step's verdict on stderr (to replay an input). */
const bool kVerbose = std::getenv("TVM_PARTIAL_FUZZ_VERBOSE") != nullptr;

template <typename F>
void Refusable(const char* name, F step) {
  try {
    step();
    if (kVerbose) std::fprintf(stderr, "%s: accepted\n", name);
  } catch (const ffi::Error& err) {  // refused: fine
    if (kVerbose) {
      std::fprintf(stderr, "%s: %s: %.160s\n", name, err.kind().c_str(), err.message().c_str());
    }
  }
}

/*! \brief Locate the fixed artifact's payloads with `origin` and build its tensors, as load. */
void Load(const Fixture& f, const storage::Origin& origin, size_t size) {
  const storage::PayloadSource source = storage::Locate(f.parsed, origin);
  size_t k = 0;
  for (const format::ParsedFunction& fn : f.parsed.functions) {
    for (const format::ParsedValue& v : fn.values) {
      if (v.kind != format::kTensor) continue;
      const uint64_t at = source.offsets.at(k++);
      if (at > size || v.tensor.nbytes > size - at) Fail("accepted: a payload past the file");
    }
  }
  for (const ffi::Tensor& t : storage::MakeTensors(f.parsed, source, origin)) Touch(t);
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  uint64_t length = 0;
  if (size >= 8) std::memcpy(&length, data, 8);
  if (size < 8 || length > size - 8 || max_size < size || seed % 8 == 0) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  std::string header(reinterpret_cast<const char*>(data) + 8, static_cast<size_t>(length));
  std::string rest(reinterpret_cast<const char*>(data) + 8 + length, size - 8 - length);
  std::string& part = (seed % 4 == 1 && !rest.empty()) ? rest : header;
  if (part.empty()) return LLVMFuzzerMutate(data, size, max_size);
  const size_t room = max_size - 8 - (header.size() + rest.size() - part.size());
  const size_t before = part.size();
  part.resize(std::max(room, before));
  part.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(&part[0]), before, room));
  length = header.size();
  std::memcpy(data, &length, 8);
  std::memcpy(data + 8, header.data(), header.size());
  std::memcpy(data + 8 + header.size(), rest.data(), rest.size());
  return 8 + header.size() + rest.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = Get();
  WriteInput(f.input, data, size);
  Refusable("Open", [&] {
    const weights::WeightsFile file = weights::Open(f.input);
    CheckAccepted(file, size);
    Refusable("RecordedHashes", [&] { weights::RecordedHashes(file); });
    Refusable("RecordedBindings", [&] { weights::RecordedBindings(file); });
    for (const auto& kv : file.entries) {
      Refusable("ParseKey", [&] { weights::ParseKey(f.input, kv.first); });
    }
    Refusable("Match", [&] {
      for (const weights::Located& at : weights::Match(weights::OpenSet(f.input), f.wanted)) {
        if (at.file != 0 || at.offset < file.data_start || at.offset > size) {
          Fail("Match: an offset outside the data");
        }
      }
    });
    Refusable("CheckRegionFile", [&] { weights::CheckRegionFile(file, f.parsed); });
  });
  const int fd = open(f.input.c_str(), O_RDONLY | O_CLOEXEC);  // as Python opens it, once
  if (fd < 0) Fail("cannot open the input");
  for (bool as_weights : {true, false}) {
    Refusable("Inspect", [&] { f.inspect(ffi::String(f.input), fd, as_weights); });
    Refusable("Verify", [&] {
      f.verify(ffi::String(f.input), fd, ffi::Optional<ffi::Function>(),
               ffi::Optional<ffi::Array<int64_t>>(), as_weights);
    });
  }
  close(fd);
  for (const char* function : {"main", "other"}) {
    Refusable("OpenWeights", [&] {
      auto tensors = f.open(ffi::String(f.input), ffi::String(function), ffi::Any());
      for (const auto& kv : tensors.cast<ffi::Map<ffi::Any, ffi::Any>>()) {
        Touch(kv.second.cast<ffi::Tensor>());
      }
    });
  }
  Refusable("load (its own weights file)", [&] { Load(f, f.own, size); });
  Refusable("load (weights_file=)", [&] { Load(f, f.override, size); });
  return 0;
}
