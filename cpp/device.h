// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file device.h
 * \brief Internal: names of device types, and which devices hold host memory.
 */
#ifndef TVM_PARTIAL_DEVICE_H_
#define TVM_PARTIAL_DEVICE_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace tvm_partial {
namespace detail {

/*! \brief Device types from this one up belong to an RPC session (TVM's RPC_SESS_MASK). */
constexpr int32_t kRPCSessMask = 128;

/*! \brief TVM's name of a device type ("cuda", the suffix of its `device_api.` global), or null. */
inline const char* DeviceName(int32_t device_type) {
  static constexpr struct {
    int32_t type;
    const char* name;
  } kNames[] = {
      {kDLCPU, "cpu"},       {kDLCUDA, "cuda"},          {kDLCUDAHost, "cuda_host"},
      {kDLOpenCL, "opencl"}, {kDLVulkan, "vulkan"},      {kDLMetal, "metal"},
      {kDLROCM, "rocm"},     {kDLROCMHost, "rocm_host"}, {kDLCUDAManaged, "cuda_managed"},
      {kDLOneAPI, "oneapi"}, {kDLWebGPU, "webgpu"},      {kDLHexagon, "hexagon"},
  };
  for (const auto& entry : kNames) {
    if (entry.type == device_type) return entry.name;
  }
  return nullptr;
}

/*! \brief "cuda:0", or "device_type 99:0" for a type without a name. */
inline std::string DeviceString(int32_t device_type, int32_t device_id) {
  const char* name = DeviceName(device_type);
  return (name != nullptr ? std::string(name) : "device_type " + std::to_string(device_type)) +
         ":" + std::to_string(device_id);
}

/*! \brief Whether the device's memory is host memory (the CPU can read it directly). */
inline bool IsHostDevice(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost ||
         device.device_type == kDLROCMHost;
}

}  // namespace detail
}  // namespace tvm_partial

#endif  // TVM_PARTIAL_DEVICE_H_
