// tests/gpu/gpu_op_device.cpp — opening device 0, compiling and loading the variants, and running one
// call on the GPU: upload, bind every argument, launch, download what the op writes.
#include "tests/gpu/gpu_op_device.h"

#include <chrono>
#include <cstdio>
#include <map>

#include <gtest/gtest.h>

#include "compiler/kernels/kernel_build.h"

namespace dsv41::gpu_test {

using gpu::CudaDriver;
using gpu::DeviceBuffer;
using gpu::KernelLauncher;

Result<Device> open_device(const Target& target) {
  DSV41_ASSIGN_OR_RETURN(CudaDriver * driver, CudaDriver::open());
  DSV41_ASSIGN_OR_RETURN(int count, driver->device_count());
  if (count < 1) return Status::error("the CUDA driver reports no device");
  DSV41_TRY(driver->use_device(0));
  DSV41_ASSIGN_OR_RETURN(std::string arch, driver->device_arch());
  // sm_90a cubins load on compute capability 9.0 only.
  std::string target_base = target.arch;
  if (!target_base.empty() && target_base.back() == 'a') target_base.pop_back();
  if (arch != target_base)
    return Status::errorf("the kernels are compiled for target {} ({}), this device is {}", target.name, target.arch,
                          driver->describe_device());
  return Device{driver, arch};
}

GpuSetup gpu_setup() {
  GpuSetup s;
  auto target = find_target("h200");
  if (!target.is_ok()) {
    s.skip = target.status().message();
    return s;
  }
  s.target = *target;
  auto device = open_device(s.target);
  if (device.is_ok()) {
    s.device = *device;
    std::printf("device: %s; run seed %llu\n", device->driver->describe_device().c_str(),
                static_cast<unsigned long long>(run_seed()));
  } else if (!dry_run()) {
    s.skip = device.status().message();
  } else {
    std::printf("DSV41_GPU_DRY: no GPU (%s); planning, inputs and CPU ops only; run seed %llu\n",
                device.status().message().c_str(), static_cast<unsigned long long>(run_seed()));
  }
  return s;
}

std::vector<int32_t> compile_and_load(const std::vector<const Case*>& list, const Target& target, const Device& device,
                                      std::unique_ptr<KernelLauncher>& launcher) {
  std::vector<int32_t> kernel_of(list.size(), -1);
  std::vector<CompiledKernel> compiled;
  // One job per distinct key (a variant may be checked by several cases: one per row class).
  std::vector<KernelJob> jobs;
  std::map<std::string, size_t> job_of_key;
  std::vector<size_t> job_of(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    auto [it, added] = job_of_key.emplace(list[i]->key, jobs.size());
    if (added) jobs.push_back({list[i]->variant.variant, list[i]->variant.threads});
    job_of[i] = it->second;
  }
  BuildOptions options;
  options.cache_dir = env_text("DSV41_CACHE") ? env_text("DSV41_CACHE") : (scratch_dir() / "kernel-cache").string();
  const auto start = std::chrono::steady_clock::now();
  auto built = build_kernels(jobs, options);
  if (built.is_ok()) {
    compiled = std::move(built).value();
  } else {
    // One variant that does not compile must not hide the others: compile them one by one.
    ADD_FAILURE() << "NVRTC: " << built.status().message();
    compiled.resize(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      auto one = build_kernels({jobs[i]}, options);
      if (one.is_ok()) compiled[i] = std::move(one->front());
      else if (one.status().message() != built.status().message()) ADD_FAILURE() << "NVRTC: " << one.status().message();
    }
  }
  std::printf("compiled %zu variants in %.1f s (NVRTC %s, cache %s)\n", compiled.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
              nvrtc_version().c_str(), options.cache_dir.c_str());
  launcher = std::make_unique<KernelLauncher>(*device.driver);
  for (size_t i = 0; i < list.size(); ++i) {
    const CompiledKernel& k = compiled[job_of[i]];
    if (k.cubin.empty()) continue;  // did not compile (reported)
    const Status fits = check_resources(k, target);
    EXPECT_TRUE(fits.is_ok()) << fits.message();
    auto loaded = launcher->load(k.cubin, k.variant.entry, list[i]->key);
    EXPECT_TRUE(loaded.is_ok()) << loaded.status().message();
    if (loaded.is_ok()) kernel_of[i] = *loaded;
  }
  return kernel_of;
}

CallEnv call_env(const CallSite& site) {
  CallEnv env;
  env.rows = site.phase->rows;
  const CallLists* lists = site.lists;
  const Phase* phase = site.phase;
  const WeightPlan* weights = site.weights;
  env.buffer = [lists, phase](const Arg& a) { return buffer_of(*lists, *phase, a); };
  env.weight_shape = [weights](const Arg& a) -> std::vector<int64_t> {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (i < 0 || i >= static_cast<int64_t>(weights->tensors.size())) return {};
    return weights->tensors[i].local_shape;
  };
  env.weight_format = [weights](int64_t i) -> std::optional<WeightFormat> {
    if (i < 0 || i >= static_cast<int64_t>(weights->tensors.size())) return std::nullopt;
    return weight_format_of(weights->tensors[i].encoding, weights->tensors[i].dtype);
  };
  return env;
}

Result<std::unique_ptr<DeviceCall>> upload_call(const Device& device, const CallSite& site, const CallInputs& in) {
  CudaDriver& d = *device.driver;
  const Call& call = *site.call;
  auto up = std::make_unique<DeviceCall>();
  gpu::LaunchBindings& b = up->bindings;
  std::vector<DeviceBuffer>& keep = up->keep;
  std::map<int64_t, DeviceBuffer>&scratch = up->scratch, &state = up->state;
  b.rows = in.rows;
  auto upload = [&](const void* data, size_t bytes) -> Result<CUdeviceptr> {
    DSV41_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::from_host(d, data, bytes));
    keep.push_back(std::move(buffer));
    return keep.back().ptr();
  };
  DSV41_ASSIGN_OR_RETURN(b.statics, upload(in.image.statics.data(), in.image.statics.size() * 4));
  DSV41_ASSIGN_OR_RETURN(DeviceBuffer errors, DeviceBuffer::allocate(d, 4));
  DSV41_TRY(errors.fill(0));
  b.errors = errors.ptr();
  up->errors.emplace(std::move(errors));

  for (const auto& [index, bytes] : in.image.scratch) {
    const bool gathered = call.op == "exchange_gather" && call.arg("x").ints[0] == index;
    DSV41_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                           gathered ? DeviceBuffer::from_host(d, in.gathered.data(), in.gathered.size() * 4)
                                    : DeviceBuffer::from_host(d, bytes.data(), bytes.size()));
    scratch.emplace(index, std::move(buffer));
  }
  for (const auto& [index, bytes] : in.image.state) {
    DSV41_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::from_host(d, bytes.data(), bytes.size()));
    state.emplace(index, std::move(buffer));
  }
  // Weights go up in their stored bytes (and scales), never as fp32: the kernels dequantize.
  std::map<const HostTensor*, gpu::DeviceWeight> tensors;
  auto tensor_ptr = [&](const HostTensor* t) -> Result<gpu::DeviceWeight> {
    if (auto it = tensors.find(t); it != tensors.end()) return it->second;
    gpu::DeviceWeight w;
    DSV41_ASSIGN_OR_RETURN(w.data, upload(t->stored.data(), t->stored.size()));
    if (!t->scales.empty()) {
      DSV41_ASSIGN_OR_RETURN(w.scales, upload(t->scales.data(), t->scales.size()));
    }
    tensors[t] = w;
    return w;
  };
  for (const Arg& a : call.args) {
    switch (a.kind) {
      case ArgKind::Scratch: b.scratch[a.name] = scratch.at(a.ints[0]).ptr(); break;
      case ArgKind::State: {
        const StateLayout& l = in.state_layout.at(a.ints[0]);
        b.state[a.name] = {state.at(a.ints[0]).ptr(), static_cast<int64_t>(l.stride), l.slots};
        break;
      }
      case ArgKind::Weight: {
        DSV41_ASSIGN_OR_RETURN(b.weights[a.name], tensor_ptr(in.weights.at(a.ints[0]).get()));
        break;
      }
      case ArgKind::WeightList: {
        std::vector<gpu::DeviceWeight> entries;  // kernels/kernel_abi.cuh's Weight, one per listed weight
        for (const HostTensor* t : in.lists.at(a.name)) {
          DSV41_ASSIGN_OR_RETURN(gpu::DeviceWeight w, tensor_ptr(t));
          entries.push_back(w);
        }
        DSV41_ASSIGN_OR_RETURN(b.weight_lists[a.name], upload(entries.data(), entries.size() * sizeof(gpu::DeviceWeight)));
        break;
      }
      case ArgKind::IntList: {
        std::vector<long long> values(a.ints.begin(), a.ints.end());
        DSV41_ASSIGN_OR_RETURN(b.int_lists[a.name], upload(values.data(), values.size() * sizeof(long long)));
        break;
      }
      default: break;
    }
  }
  return up;
}

Status run_gpu(const Device& device, KernelLauncher& launcher, int32_t kernel, const CallSite& site,
               const CallInputs& in, Image& result, int32_t& error_word) {
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<DeviceCall> up, upload_call(device, site, in));
  DSV41_TRY(launcher.launch(kernel, *site.call, call_env(site), up->bindings));
  DSV41_TRY(device.driver->synchronize());
  for (const Output& o : in.outputs) {
    std::vector<uint8_t>& bytes = o.state ? result.state.at(o.index) : result.scratch.at(o.index);
    const DeviceBuffer& buffer = o.state ? up->state.at(o.index) : up->scratch.at(o.index);
    DSV41_TRY(buffer.download(bytes.data(), bytes.size()));
  }
  return up->errors->download(&error_word, 4);
}

const char* error_code_name(int32_t code) {
  switch (code) {
    case 1: return "ERR_TOKEN";
    case 2: return "ERR_EXPERT";
    case 3: return "ERR_CAPACITY";
    case 4: return "ERR_SELECTION";
    case 5: return "ERR_STATICS";
    default: return "unknown";
  }
}

}  // namespace dsv41::gpu_test
