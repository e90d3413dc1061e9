// Copyright 2026 The tvm-partial Authors
// SPDX-License-Identifier: Apache-2.0
/*!
 * \file device.cc
 * \brief Names of device types (device.h).
 */
#include "device.h"

namespace tvm_partial {
namespace detail {

const char* DeviceName(int32_t device_type) {
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

std::string DeviceString(int32_t device_type, int32_t device_id) {
  const char* name = DeviceName(device_type);
  return (name != nullptr ? std::string(name) : "device_type " + std::to_string(device_type)) +
         ":" + std::to_string(device_id);
}

}  // namespace detail
}  // namespace tvm_partial
