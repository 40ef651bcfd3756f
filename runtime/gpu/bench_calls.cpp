// runtime/gpu/bench_calls.cpp — the per-call listing of a bench phase and its grouping by call site.
#include "runtime/gpu/bench_calls.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "runtime/gpu/bench_stats.h"

namespace dsv41::gpu {

Result<std::vector<CallTime>> call_times(const fb::Program& program, const Phase& phase, const DeviceLayout& layout,
                                         const std::vector<double>& call_ms) {
  DSV41_CHECK(call_ms.size() == phase.calls.size());
  std::vector<CallTime> out;
  for (size_t i = 0; i < phase.calls.size(); ++i) {
    if (call_ms[i] < 0) continue;
    const Call& call = phase.calls[i];
    CallTime t;
    for (const Arg& a : call.args) {
      if (a.kind != ArgKind::Weight) continue;
      const int64_t index = a.ints.at(0);
      DSV41_ASSIGN_OR_RETURN(const uint64_t bytes, stored_bytes(layout, index, phase, i));
      t.bytes += bytes;
      if (t.weight.empty()) t.weight = program.weights()->Get(static_cast<uint32_t>(index))->name()->str();
    }
    if (t.weight.empty()) continue;
    t.index = i;
    t.op = call.op;
    std::copy(std::begin(call.launch.grid), std::end(call.launch.grid), t.grid);
    t.ms = call_ms[i];
    out.push_back(std::move(t));
  }
  return out;
}

void add_routed_bytes(std::vector<CallTime>& calls, const std::vector<ExpertCall>& experts,
                      const std::vector<uint64_t>& routed) {
  for (size_t k = 0; k < experts.size() && k < routed.size(); ++k)
    for (CallTime& c : calls)
      if (c.index == experts[k].call) c.bytes += routed[k];
}

std::string call_site(const std::string& weight) {
  std::string out;
  size_t begin = 0;
  while (begin <= weight.size()) {
    size_t end = weight.find('.', begin);
    if (end == std::string::npos) end = weight.size();
    const std::string part = weight.substr(begin, end - begin);
    const bool number = !part.empty() && std::all_of(part.begin(), part.end(), [](char ch) {
      return std::isdigit(static_cast<unsigned char>(ch)) != 0;
    });
    out += (begin > 0 ? "." : "") + (number ? std::string("*") : part);
    begin = end + 1;
  }
  return out;
}

std::vector<SiteTime> group_call_sites(const std::vector<CallTime>& calls) {
  std::map<std::pair<std::string, std::string>, std::vector<const CallTime*>> by_site;
  for (const CallTime& c : calls) by_site[{c.op, call_site(c.weight)}].push_back(&c);
  std::vector<SiteTime> out;
  for (const auto& [key, members] : by_site) {
    SiteTime s;
    s.op = key.first;
    s.site = key.second;
    std::vector<double> ms;
    for (const CallTime* c : members) {
      s.calls += 1;
      s.bytes += c->bytes;
      s.ms += c->ms;
      ms.push_back(c->ms);
    }
    s.bytes /= static_cast<uint64_t>(s.calls);
    std::sort(ms.begin(), ms.end());
    s.median_ms = quantile(ms, 0.5);
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const SiteTime& a, const SiteTime& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace dsv41::gpu
