// tests/gpu/gpu_op_test.cpp — every kernel variant the planner binds, checked against the CPU op on
// the same bytes (ctest label "gpu": `ctest -LE gpu` leaves it out; without a driver it skips).
//
// Flow: header-only packs of the tiny fixture (bf16) and of the release config are synthesised
// in-process; their call lists are emitted and bound to kernels for target h200 (as
// compiler/aot_needs.cpp does): tiny worlds 1-4, every rank, activations bf16 and f32; release world
// 4, ranks 0 and 2, the heavy ops of the largest decode phase of at most 16 rows. Each distinct
// variant key keeps one representative call (the smallest phase of at most 64 rows for the tiny, the
// fewest weight elements), the variants are compiled with NVRTC (cache: $DSV41_CACHE or the test's
// temp folder), and each call runs on random valid inputs (tests/gpu/gpu_op_inputs.h) on the CPU and
// on the GPU from identical bytes; every buffer the op writes is compared (tolerances in
// gpu_op_inputs.h: bf16 |g−c| ≤ 2e-2·|c| + 1e-3·max|c|, f32 ≤ 1e-3·|c| + 1e-4·max|c|, I32
// identical) and the call's error word must be 0.
//
// Environment: DSV41_GPU_SEED=N reruns with a given run seed (printed, and named in every failure);
// DSV41_GPU_FILTER=text checks only keys containing text; DSV41_GPU_DRY=1 runs everything but the GPU
// (planning, inputs, CPU ops) on a machine without a driver; DSV41_GPU_SELFTEST=1 flips one bit of
// every GPU output before comparing (every variant must then fail: the comparisons are live); DSV41_SOURCE_DIR overrides the source
// tree holding fixtures/; DSV41_CACHE is the NVRTC cache folder.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "common/kernel_contract.h"
#include "common/numeric_formats.h"
#include "common/rank_share.h"
#include "compiler/emitter.h"
#include "compiler/kernel_build.h"
#include "compiler/kernel_plan.h"
#include "compiler/rank_planner.h"
#include "compiler/synth_pack.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/kernel_launcher.h"
#include "tests/gpu/gpu_op_inputs.h"

namespace dsv41::gpu_test {
namespace {

namespace fs = std::filesystem;
using gpu::CudaDriver;
using gpu::DeviceBuffer;
using gpu::KernelLauncher;

constexpr int64_t kTinyMaxRows = 64;    // tiny: the largest phase of at most this many rows represents a key
constexpr int64_t kReleaseMaxRows = 16; // release: the largest decode phase of at most this many rows
const std::set<std::string> kReleaseOps = {"moe_experts", "shared_expert", "sparse_attention", "index_select",
                                           "compress",    "linear",        "hc_mix",           "router"};

const char* env_text(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool dry_run() { return env_text("DSV41_GPU_DRY") != nullptr; }

// The source tree holding fixtures/: $DSV41_SOURCE_DIR, the build's, or a parent of the working
// folder or of the executable (the binary may run on another machine, from a copied tree).
fs::path source_root() {
  auto holds = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(p / "fixtures/dsv41-tiny/config.json", ec);
  };
  if (const char* env = env_text("DSV41_SOURCE_DIR"); env && holds(env)) return env;
  if (holds(DSV41_SOURCE_DIR)) return DSV41_SOURCE_DIR;
  std::error_code ec;
  for (fs::path start : {fs::current_path(ec), fs::read_symlink("/proc/self/exe", ec).parent_path()})
    for (fs::path p = start; !p.empty(); p = p.parent_path()) {
      if (holds(p)) return p;
      if (p == p.root_path()) break;
    }
  return {};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A folder for this process's packs and kernel cache, removed at exit.
const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("dsv41-gpu-op-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  static const struct Remover {
    ~Remover() {
      std::error_code ec;
      if (!std::getenv("DSV41_KEEP_TEST_DIRS")) fs::remove_all(dir, ec);
    }
  } remover;
  return dir;
}

// A header-only pack of `fixture` written to a temp folder and read back (config and headers).
Result<ModelInputs> synth_inputs(const std::string& fixture, SynthFormat format, int shards) {
  const fs::path root = source_root();
  if (root.empty()) return Status::error("fixtures/ not found (set DSV41_SOURCE_DIR to the source tree)");
  const fs::path config_path = root / "fixtures" / fixture / "config.json";
  const std::string text = read_text(config_path);
  if (text.empty()) return Status::errorf("{}: cannot read", config_path.string());
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(text, config_path.string()));
  const fs::path dir = scratch_dir() / ("pack-" + fixture);
  SynthPackOptions options;
  options.out_dir = dir.string();
  options.format = format;
  options.headers_only = true;
  options.seed = 4141;
  options.shards = shards;
  DSV41_TRY(write_synth_pack(config, text, options));
  auto inputs = ModelInputs::read(dir.string());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return inputs;
}

// One rank's emitted and bound call lists.
struct RankLists {
  std::string label;  // "tiny act=bf16 world 2 rank 1"
  int world = 1, rank = 0;
  ServingSettings settings;
  WeightPlan weights;
  CallLists calls;
  KernelPlan plan;
  std::map<int64_t, int64_t> cache_ratio;
};

Result<std::shared_ptr<RankLists>> plan_lists(const ModelInputs& inputs, const std::string& label, int world, int rank,
                                              const ServingSettings& settings, const Target& target,
                                              std::set<std::string>& without_kernel) {
  DSV41_TRY(check_settings(inputs.config, settings));
  auto r = std::make_shared<RankLists>();
  r->label = fmt::format("{} world {} rank {}", label, world, rank);
  r->world = world;
  r->rank = rank;
  r->settings = settings;
  DSV41_ASSIGN_OR_RETURN(RankShare share, plan_share(inputs.config, world, rank));
  r->weights = slice_weights(inputs.match, inputs.pack, share);
  r->calls = emit_call_lists(inputs.config, share, r->weights, settings);
  for (const Phase& phase : r->calls.phases)
    for (const Call& call : phase.calls) {
      auto record = [&](const char* arg, int64_t ratio) {
        if (const Arg* a = call.find_arg(arg); a && a->kind == ArgKind::State) r->cache_ratio[a->ints[0]] = ratio;
      };
      if (call.op == "compress") {
        record("cache", call.constant("ratio"));
        record("index_cache", call.constant("ratio"));
      } else if (call.op == "index_select") {
        record("index_cache", call.constant("ratio"));
      }
    }
  // Ops whose kernel is not written yet are left out (and reported), so the others are still checked.
  for (Phase& phase : r->calls.phases)
    std::erase_if(phase.calls, [&](const Call& call) {
      if (find_contract(call.op)) return false;
      without_kernel.insert(call.op);
      return true;
    });
  DSV41_ASSIGN_OR_RETURN(r->plan, plan_kernels(r->calls, r->weights, target, rank));
  return r;
}

// One variant key and the call that represents it.
struct Case {
  std::string key;
  std::shared_ptr<const RankLists> lists;
  size_t phase = 0, call = 0;
  PlannedVariant variant;
  std::string where;
};

std::string where_of(const RankLists& r, size_t p, size_t c) {
  const Phase& phase = r.calls.phases[p];
  return fmt::format("{}, phase {} ({} rows), call {} ({})", r.label, phase.name, phase.rows, c, phase.calls[c].op);
}

// Adds the calls of `phases` of `r` as candidates, keeping per key the one `better` prefers.
template <class Better>
void collect(std::map<std::string, Case>& cases, const std::shared_ptr<const RankLists>& r,
             const std::vector<size_t>& phases, const std::set<std::string>* ops, Better better) {
  for (size_t p : phases) {
    const Phase& phase = r->calls.phases[p];
    for (size_t c = 0; c < phase.calls.size(); ++c) {
      const Call& call = phase.calls[c];
      if (ops && !ops->count(call.op)) continue;
      if (call.launch.variant < 0) continue;
      const PlannedVariant& v = r->plan.variants.at(call.launch.variant);
      if (const char* filter = env_text("DSV41_GPU_FILTER"); filter && v.variant.key.find(filter) == std::string::npos)
        continue;
      Case candidate{v.variant.key, r, p, c, v, where_of(*r, p, c)};
      auto it = cases.find(v.variant.key);
      if (it == cases.end()) cases.emplace(v.variant.key, std::move(candidate));
      else if (better(candidate, it->second)) it->second = std::move(candidate);
    }
  }
}

int64_t case_weights(const Case& c) {
  return call_weight_elements(c.lists->calls.phases[c.phase].calls[c.call], c.lists->weights);
}

CallSite site_of(const Case& c) {
  CallSite site;
  site.lists = &c.lists->calls;
  site.phase = &c.lists->calls.phases[c.phase];
  site.call = &site.phase->calls[c.call];
  site.weights = &c.lists->weights;
  site.settings = c.lists->settings;
  site.rank = c.lists->rank;
  site.world = c.lists->world;
  site.cache_ratio = c.lists->cache_ratio;
  return site;
}

// ---- the run seed and the summary ----

uint64_t run_seed() {
  static const uint64_t seed = [] {
    if (const char* env = env_text("DSV41_GPU_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 0));
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return seed;
}

struct Counts {
  int tiny = 0, release = 0;
};
Counts& counts() {
  static Counts c;
  return c;
}

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    const Counts& c = counts();
    if (c.tiny + c.release == 0) return;
    std::printf("checked %d variants (tiny worlds 1-4: %d, release world 4: %d)%s, run seed %llu\n", c.tiny + c.release,
                c.tiny, c.release, dry_run() ? " on the CPU only (DSV41_GPU_DRY)" : "",
                static_cast<unsigned long long>(run_seed()));
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

// ---- the device ----

struct Device {
  CudaDriver* driver = nullptr;
  std::string arch;
};

// The driver and device 0, or why the test cannot run (empty device and a skip reason).
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

// The GPU side of one call: uploads the image, binds every argument, launches, downloads the outputs
// into `result` (a copy of the image) and the error word.
Status run_gpu(const Device& device, KernelLauncher& launcher, int32_t kernel, const CallSite& site,
               const CallInputs& in, Image& result, int32_t& error_word) {
  CudaDriver& d = *device.driver;
  const Call& call = *site.call;
  gpu::LaunchBindings b;
  b.rows = in.rows;
  std::vector<DeviceBuffer> keep;
  auto upload = [&](const void* data, size_t bytes) -> Result<CUdeviceptr> {
    DSV41_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::from_host(d, data, bytes));
    keep.push_back(std::move(buffer));
    return keep.back().ptr();
  };
  DSV41_ASSIGN_OR_RETURN(b.statics, upload(in.image.statics.data(), in.image.statics.size() * 4));
  DSV41_ASSIGN_OR_RETURN(DeviceBuffer errors, DeviceBuffer::allocate(d, 4));
  DSV41_TRY(errors.fill(0));
  b.errors = errors.ptr();

  std::map<int64_t, DeviceBuffer> scratch, state;
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
  std::map<const HostTensor*, CUdeviceptr> tensors;
  auto tensor_ptr = [&](const HostTensor* t) -> Result<CUdeviceptr> {
    if (auto it = tensors.find(t); it != tensors.end()) return it->second;
    DSV41_ASSIGN_OR_RETURN(CUdeviceptr ptr, upload(t->values.data(), t->values.size() * 4));
    tensors[t] = ptr;
    return ptr;
  };
  for (const Arg& a : call.args) {
    switch (a.kind) {
      case ArgKind::Scratch: b.scratch[a.name] = scratch.at(a.ints[0]).ptr(); break;
      case ArgKind::State: {
        const StateLayout& l = in.state_layout.at(a.ints[0]);
        b.state[a.name] = {state.at(a.ints[0]).ptr(), static_cast<int64_t>(l.stride)};
        break;
      }
      case ArgKind::Weight: {
        DSV41_ASSIGN_OR_RETURN(b.weights[a.name], tensor_ptr(in.weights.at(a.ints[0]).get()));
        break;
      }
      case ArgKind::WeightList: {
        std::vector<CUdeviceptr> ptrs;
        for (const HostTensor* t : in.lists.at(a.name)) {
          DSV41_ASSIGN_OR_RETURN(CUdeviceptr ptr, tensor_ptr(t));
          ptrs.push_back(ptr);
        }
        DSV41_ASSIGN_OR_RETURN(b.weight_lists[a.name], upload(ptrs.data(), ptrs.size() * sizeof(CUdeviceptr)));
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
  DSV41_TRY(launcher.launch(kernel, call, call_env(site), b));
  DSV41_TRY(d.synchronize());
  for (const Output& o : in.outputs) {
    std::vector<uint8_t>& bytes = o.state ? result.state.at(o.index) : result.scratch.at(o.index);
    const DeviceBuffer& buffer = o.state ? state.at(o.index) : scratch.at(o.index);
    DSV41_TRY(buffer.download(bytes.data(), bytes.size()));
  }
  return errors.download(&error_word, 4);
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

// Checks one case; failures are reported with the key, the call, the inputs and the seed.
void check_case(const Case& c, const Device* device, KernelLauncher* launcher, int32_t kernel) {
  const uint64_t seed = mix_seed(run_seed(), hash_text(c.key));
  SCOPED_TRACE(fmt::format("{} — {} — run seed {} (rerun: DSV41_GPU_SEED={} DSV41_GPU_FILTER='{}')", c.key, c.where,
                           run_seed(), run_seed(), c.key));
  const CallSite site = site_of(c);
  auto inputs = make_inputs(site, seed);
  ASSERT_TRUE(inputs.is_ok()) << "building the inputs: " << inputs.status().message();
  Image cpu = inputs->image;
  const Status cpu_status = run_cpu(site, *inputs, cpu);
  ASSERT_TRUE(cpu_status.is_ok()) << "the CPU op refused the generated inputs: " << cpu_status.message()
                                  << "\n  inputs: " << inputs->description;
  // The CPU op must have written every float output (no 0xFF poison, which reads as NaN, left).
  for (const Output& o : inputs->outputs) {
    const DType dtype = output_dtype(site, o);
    if (dtype == DType::I32) continue;
    const std::vector<uint8_t>& bytes = output_bytes(cpu, o);
    bool finite = true;
    for (size_t i = 0; i < bytes.size() && finite; i += dtype_bytes(dtype)) {
      float v;
      if (dtype == DType::BF16) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + i, 2);
        v = bf16_to_f32(h);
      } else {
        std::memcpy(&v, bytes.data() + i, 4);
      }
      finite = std::isfinite(v);
    }
    EXPECT_TRUE(finite) << "the CPU op left a non-finite value in " << o.arg
                        << " (unwritten poison or overflow: the inputs are not meaningful)\n  inputs: "
                        << inputs->description;
  }
  if (!device) return;  // dry run: planning, inputs and the CPU op only

  Image gpu = inputs->image;
  int32_t error_word = -1;
  const Status gpu_status = run_gpu(*device, *launcher, kernel, site, *inputs, gpu, error_word);
  ASSERT_TRUE(gpu_status.is_ok()) << "GPU: " << gpu_status.message() << "\n  inputs: " << inputs->description;
  EXPECT_EQ(error_word, 0) << "the kernel reported error " << error_word << " (" << error_code_name(error_word)
                           << ") on valid inputs\n  inputs: " << inputs->description;
  if (env_text("DSV41_GPU_SELFTEST")) {  // every comparison must then fail: proves they look at the data
    for (const Output& o : inputs->outputs) {
      std::vector<uint8_t>& bytes = o.state ? gpu.state.at(o.index) : gpu.scratch.at(o.index);
      const int size = dtype_bytes(output_dtype(site, o));
      if (!bytes.empty()) bytes[(bytes.size() / size / 2) * size + size - 1] ^= 0x40;  // a high exponent / value bit
    }
  }
  for (const Output& o : inputs->outputs) {
    const std::vector<uint8_t>& c_bytes = output_bytes(cpu, o);
    const std::vector<uint8_t>& g_bytes = output_bytes(gpu, o);
    const std::string report =
        compare_output(fmt::format("output {}{}", o.arg, o.state ? " (state, every slot)" : ""), output_dtype(site, o),
                       output_shape(site, *inputs, o), c_bytes.data(), g_bytes.data(), c_bytes.size(),
                       o.state ? inputs->state_layout.at(o.index).stride : 0);
    EXPECT_TRUE(report.empty()) << report << "\n  inputs: " << inputs->description;
  }
}

// Compiles the cases' variants, then checks each. Returns how many were checked.
int check_cases(const std::map<std::string, Case>& cases, const Target& target, const Device* device) {
  std::vector<const Case*> list;
  for (const auto& [key, c] : cases) list.push_back(&c);
  std::vector<CompiledKernel> compiled;
  std::unique_ptr<KernelLauncher> launcher;
  std::vector<int32_t> kernel_of(list.size(), -1);
  if (device) {
    std::vector<KernelJob> jobs;
    for (const Case* c : list) jobs.push_back({c->variant.variant, c->variant.threads});
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
    launcher = std::make_unique<KernelLauncher>(*device->driver);
    for (size_t i = 0; i < list.size(); ++i) {
      if (compiled[i].cubin.empty()) continue;  // did not compile (reported)
      const Status fits = check_resources(compiled[i], target);
      EXPECT_TRUE(fits.is_ok()) << fits.message();
      auto loaded = launcher->load(compiled[i].cubin, compiled[i].variant.entry, list[i]->key);
      EXPECT_TRUE(loaded.is_ok()) << loaded.status().message();
      if (loaded.is_ok()) kernel_of[i] = *loaded;
    }
  }
  int checked = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (device && kernel_of[i] < 0) continue;
    const auto start = std::chrono::steady_clock::now();
    const int parts_before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    check_case(*list[i], device, launcher.get(), kernel_of[i]);
    const int parts = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    std::printf("  %-4s %6.2f s  %s  [%s]\n", parts == parts_before ? "ok" : "FAIL",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), list[i]->key.c_str(),
                list[i]->where.c_str());
    ++checked;
  }
  return checked;
}

// Skips (no driver, no device, another arch) unless DSV41_GPU_DRY asks for the CPU half.
struct GpuSetup {
  Target target;
  std::optional<Device> device;
  std::string skip;
};
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

void report_without_kernel(const std::set<std::string>& ops) {
  if (ops.empty()) return;
  std::string names;
  for (const std::string& op : ops) names += (names.empty() ? "" : ", ") + op;
  ADD_FAILURE() << "ops without a kernel in kernels/ (their calls were not checked): " << names;
}

TEST(GpuOps, TinyWorldsOneToFourMatchTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  auto inputs = synth_inputs("dsv41-tiny", SynthFormat::BF16, 1);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  // A key is represented by a call of the largest phase of at most kTinyMaxRows rows (more rows, more
  // sequences per step; else the smallest phase), then by the call reading the fewest weight elements.
  auto better = [](const Case& a, const Case& b) {
    auto rank_rows = [](int64_t rows) { return rows <= kTinyMaxRows ? -rows : rows; };
    const int64_t ra = rank_rows(a.lists->calls.phases[a.phase].rows), rb = rank_rows(b.lists->calls.phases[b.phase].rows);
    if (ra != rb) return ra < rb;
    const int64_t wa = case_weights(a), wb = case_weights(b);
    if (wa != wb) return wa < wb;
    // Then the larger world and the later rank (exchange_gather's widths differ per rank).
    if (a.lists->world != b.lists->world) return a.lists->world > b.lists->world;
    return a.lists->rank > b.lists->rank;
  };
  for (DType activations : {DType::BF16, DType::F32}) {
    ServingSettings settings;
    settings.context = 256;
    settings.slots = 4;
    settings.prefill_rows = {2048, 64, 16};
    settings.activations = activations;
    for (int world = 1; world <= 4; ++world)
      for (int rank = 0; rank < world; ++rank) {
        auto r = plan_lists(*inputs, fmt::format("tiny act={}", dtype_name(activations)), world, rank, settings,
                            s.target, without_kernel);
        ASSERT_TRUE(r.is_ok()) << "tiny world " << world << " rank " << rank << ": " << r.status().message();
        std::vector<size_t> phases((*r)->calls.phases.size());
        std::iota(phases.begin(), phases.end(), size_t{0});
        collect(cases, *r, phases, nullptr, better);
      }
  }
  report_without_kernel(without_kernel);
  std::printf("tiny: %zu distinct variants\n", cases.size());
  counts().tiny += check_cases(cases, s.target, s.device ? &*s.device : nullptr);
}

TEST(GpuOps, ReleaseWorldFourDecodeMatchesTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  auto inputs = synth_inputs("dsv41-release", SynthFormat::Release, 8);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  auto better = [](const Case& a, const Case& b) { return case_weights(a) < case_weights(b); };
  const ServingSettings settings;  // the defaults: context 65536, 8 slots, decode rows 1..16
  for (int rank : {0, 2}) {
    auto r = plan_lists(*inputs, "release", 4, rank, settings, s.target, without_kernel);
    ASSERT_TRUE(r.is_ok()) << "release world 4 rank " << rank << ": " << r.status().message();
    // The decode phase with the most rows <= kReleaseMaxRows.
    size_t best = SIZE_MAX;
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p) {
      const Phase& phase = (*r)->calls.phases[p];
      if (phase.kind != PhaseKind::Decode || phase.rows > kReleaseMaxRows) continue;
      if (best == SIZE_MAX || phase.rows > (*r)->calls.phases[best].rows) best = p;
    }
    ASSERT_NE(best, SIZE_MAX) << "release world 4 rank " << rank << ": no decode phase of at most " << kReleaseMaxRows
                              << " rows";
    for (const PhaseRefusal& refusal : (*r)->plan.refusals)
      EXPECT_NE(refusal.phase, best) << "the checked phase does not fit h200: " << refusal.message;
    collect(cases, *r, {best}, &kReleaseOps, better);
  }
  report_without_kernel(without_kernel);
  std::printf("release: %zu distinct variants of the heavy ops\n", cases.size());
  counts().release += check_cases(cases, s.target, s.device ? &*s.device : nullptr);
}

}  // namespace
}  // namespace dsv41::gpu_test
