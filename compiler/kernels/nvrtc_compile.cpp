// compiler/kernels/nvrtc_compile.cpp — one NVRTC compile of one kernel to a cubin (no cache), the NVRTC
// options and version, and the reading of ptxas's -v report (and the cubin's module globals) into the
// entry's resources.
// Declared in compiler/kernels/kernel_build.h (compile_source, nvrtc_options, nvrtc_version).
#include "compiler/kernels/kernel_build.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nvrtc.h>

#include "compiler/kernels/kernel_cache.h"  // looks_like_cubin

namespace dsv41 {
namespace {

// Destroys the program however the compile ends.
class NvrtcProgram {
 public:
  NvrtcProgram() = default;
  ~NvrtcProgram() {
    if (program_) nvrtcDestroyProgram(&program_);
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  nvrtcProgram* out() { return &program_; }
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The first integer that ends right before `suffix` on `line` ("Used 10 registers" -> 10).
std::optional<int64_t> number_before(std::string_view line, std::string_view suffix) {
  const size_t at = line.find(suffix);
  if (at == std::string_view::npos) return std::nullopt;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(line.data() + begin, line.data() + end, value);
  if (ec != std::errc() || ptr != line.data() + end) return std::nullopt;
  return value;
}

// Reads the module's __device__ variables and the entry's registers, static shared memory and local
// memory from ptxas's -v report:
//   ptxas info    : 1200024 bytes gmem          (once a module, 0 without globals)
//   ptxas info    : Compiling entry function 'E' for 'sm_90a'
//   ptxas info    : Function properties for E
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem[, 16 bytes lmem]
std::optional<KernelResources> parse_ptxas_report(const std::string& log, const std::string& entry) {
  KernelResources resources;
  bool found_registers = false, found_globals = false;
  std::string compiling, properties_of;
  const std::string compiling_tag = "Compiling entry function '";
  const std::string properties_tag = "Function properties for ";
  size_t pos = 0;
  while (pos <= log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string::npos) eol = log.size();
    std::string_view line(log.data() + pos, eol - pos);
    pos = eol + 1;
    if (size_t at = line.find(compiling_tag); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + compiling_tag.size());
      compiling = std::string(rest.substr(0, rest.find('\'')));
      properties_of.clear();
      continue;
    }
    if (size_t at = line.find(properties_tag); at != std::string_view::npos) {
      std::string_view rest = line.substr(at + properties_tag.size());
      while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
      properties_of = std::string(rest);
      continue;
    }
    if (auto gmem = number_before(line, "bytes gmem")) {
      resources.module_globals = *gmem;
      found_globals = true;
    }
    if (properties_of == entry) {
      if (auto stack = number_before(line, "bytes stack frame"))
        resources.local_bytes = std::max(resources.local_bytes, *stack);
    }
    if (compiling == entry) {
      if (auto registers = number_before(line, "registers"); registers && line.find("Used ") != std::string_view::npos) {
        resources.registers = static_cast<int>(*registers);
        found_registers = true;
        if (auto smem = number_before(line, "bytes smem")) resources.static_shared = *smem;
        if (auto lmem = number_before(line, "bytes lmem")) resources.local_bytes = std::max(resources.local_bytes, *lmem);
      }
    }
  }
  if (!found_registers || !found_globals) return std::nullopt;
  return resources;
}

std::string nvrtc_error(nvrtcResult result) { return nvrtcGetErrorString(result); }

}  // namespace

std::string nvrtc_version() {
  static const std::string version = [] {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return std::string("unknown");
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return version;
}

// --no-cache: on a machine with a driver, NVRTC (12.9+) would otherwise serve repeated compiles from
// the driver's cache, skipping ptxas and with it the -v report the resources are read from.
std::vector<std::string> nvrtc_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "-std=c++17", "--fmad=false", "--ptxas-options=-v", "--no-cache", "-DNDEBUG"};
}

Result<CompiledKernel> compile_source(const std::string& source, const std::string& entry, const std::string& arch,
                                      const std::string& name_for_errors, const std::vector<KernelSource>& headers) {
  if (arch.rfind("sm_", 0) != 0)
    return Status::errorf("kernel {}: arch '{}' is not a real GPU architecture (sm_XX): NVRTC makes no cubin for it",
                          name_for_errors, arch);
  // NVRTC wants NUL-terminated texts; a string_view need not be.
  std::vector<std::string> names, texts;
  for (const auto& header : headers) {
    names.emplace_back(header.file_name);
    texts.emplace_back(header.text);
  }
  std::vector<const char*> name_ptrs, text_ptrs;
  for (size_t i = 0; i < headers.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    text_ptrs.push_back(texts[i].c_str());
  }

  NvrtcProgram program;
  const std::string file_name = (entry.empty() ? std::string("kernel") : entry) + ".cu";
  nvrtcResult result = nvrtcCreateProgram(program.out(), source.c_str(), file_name.c_str(),
                                          static_cast<int>(headers.size()), text_ptrs.data(), name_ptrs.data());
  if (result != NVRTC_SUCCESS)
    return Status::errorf("kernel {}: nvrtcCreateProgram failed: {}", name_for_errors, nvrtc_error(result));

  const std::vector<std::string> options = nvrtc_options(arch);
  std::vector<const char*> option_ptrs;
  for (const auto& option : options) option_ptrs.push_back(option.c_str());
  result = nvrtcCompileProgram(program.get(), static_cast<int>(option_ptrs.size()), option_ptrs.data());
  const std::string log = program_log(program.get());
  if (result != NVRTC_SUCCESS)
    return Status::errorf("kernel {}: NVRTC {} failed ({}) for {}:\n{}", name_for_errors, nvrtc_version(),
                          nvrtc_error(result), arch, log);

  size_t cubin_size = 0;
  result = nvrtcGetCUBINSize(program.get(), &cubin_size);
  if (result != NVRTC_SUCCESS || cubin_size == 0)
    return Status::errorf("kernel {}: NVRTC produced no cubin for {}: {}", name_for_errors, arch,
                          result != NVRTC_SUCCESS ? nvrtc_error(result) : "empty");
  CompiledKernel kernel;
  kernel.cubin.resize(cubin_size);
  result = nvrtcGetCUBIN(program.get(), reinterpret_cast<char*>(kernel.cubin.data()));
  if (result != NVRTC_SUCCESS)
    return Status::errorf("kernel {}: nvrtcGetCUBIN failed: {}", name_for_errors, nvrtc_error(result));
  if (!looks_like_cubin(kernel.cubin, entry))
    return Status::errorf("kernel {}: the cubin for {} is not an ELF image holding the entry {}", name_for_errors,
                          arch, entry);

  auto resources = parse_ptxas_report(log, entry);
  if (!resources)
    return Status::errorf("kernel {}: ptxas reported no register count for the entry {} or no module gmem bytes; "
                          "its log:\n{}",
                          name_for_errors, entry, log);
  kernel.resources = *resources;
  kernel.variant.key = name_for_errors;
  kernel.variant.entry = entry;
  kernel.variant.arch = arch;
  return kernel;
}

}  // namespace dsv41
