// tools/kernel_contract/main.cpp — reads kernels/*.cuh with libclang and writes the kernel contract
// table (each entry's template parameters and parameter list) plus the header texts the compiler
// embeds, so no kernel signature is ever copied by hand (docs/kernels.md).
//
//   dsv41_kernel_contract OUT.inc KERNELS_DIR HEADER.cuh...
#include <clang-c/Index.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Param {
  std::string name, type;
};
struct Entry {
  std::string op, file;
  std::vector<Param> template_params, params;
};

const std::set<std::string> kParamTypes = {"Rows",   "Int",    "Real",       "Statics", "Scratch",
                                           "State",  "Weight", "WeightList", "IntList", "Errors"};

std::string text_of(CXString s) {
  std::string out = clang_getCString(s) ? clang_getCString(s) : "";
  clang_disposeString(s);
  return out;
}

// "const dsv41k::Rows" -> "Rows": the typedef name as kernel_abi.cuh spells it.
std::string typedef_name(std::string type) {
  if (type.rfind("const ", 0) == 0) type = type.substr(6);
  if (type.rfind("dsv41k::", 0) == 0) type = type.substr(8);
  return type;
}

struct Visit {
  std::string file;
  std::vector<std::string> scope;
  std::vector<Entry>* entries;
  std::vector<std::string>* errors;
};

CXChildVisitResult visit(CXCursor cursor, CXCursor, CXClientData data) {
  auto* v = static_cast<Visit*>(data);
  if (!clang_Location_isFromMainFile(clang_getCursorLocation(cursor))) return CXChildVisit_Continue;
  const CXCursorKind kind = clang_getCursorKind(cursor);
  if (kind == CXCursor_Namespace) {
    v->scope.push_back(text_of(clang_getCursorSpelling(cursor)));
    clang_visitChildren(cursor, visit, data);
    v->scope.pop_back();
    return CXChildVisit_Continue;
  }
  const bool in_entry_ns = v->scope == std::vector<std::string>{"dsv41k", "entry"};
  if (kind != CXCursor_FunctionTemplate || !in_entry_ns) return CXChildVisit_Continue;
  Entry e;
  e.op = text_of(clang_getCursorSpelling(cursor));
  e.file = v->file;
  clang_visitChildren(
      cursor,
      [](CXCursor child, CXCursor, CXClientData d) {
        auto* entry = static_cast<Entry*>(d);
        const CXCursorKind k = clang_getCursorKind(child);
        const std::string name = text_of(clang_getCursorSpelling(child));
        const std::string type = text_of(clang_getTypeSpelling(clang_getCursorType(child)));
        if (k == CXCursor_NonTypeTemplateParameter) entry->template_params.push_back({name, type});
        if (k == CXCursor_TemplateTypeParameter) entry->template_params.push_back({name, "typename"});
        if (k == CXCursor_ParmDecl) entry->params.push_back({name, typedef_name(type)});
        return CXChildVisit_Continue;
      },
      &e);
  for (const Param& p : e.template_params)
    if (p.type != "long long" && p.type != "int")
      v->errors->push_back(e.file + ": entry " + e.op + ": template parameter " + p.name + " has type " + p.type +
                           "; expected long long (a constant) or int (dtype_<arg>, format_<arg>)");
  for (const Param& p : e.params)
    if (!kParamTypes.count(p.type))
      v->errors->push_back(e.file + ": entry " + e.op + ": parameter " + p.name + " has type \"" + p.type +
                           "\"; expected a typedef of kernel_abi.cuh (Rows, Int, Real, Statics, Scratch, State, "
                           "Weight, WeightList, IntList, Errors)");
  const std::string stem = std::filesystem::path(e.file).stem().string();
  if (e.op != stem)
    v->errors->push_back(e.file + ": entry " + e.op + " must be named like its file (" + stem + ")");
  v->entries->push_back(std::move(e));
  return CXChildVisit_Continue;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s OUT.inc KERNELS_DIR HEADER.cuh...\n", argv[0]);
    return 2;
  }
  const std::string out_path = argv[1], include_flag = std::string("-I") + argv[2];
  std::vector<std::string> files(argv + 3, argv + argc);
  std::sort(files.begin(), files.end());
  const char* args[] = {"-x", "c++", "-std=c++17", "-DDSV41_CONTRACT_SCAN", include_flag.c_str(), "-ferror-limit=0"};
  CXIndex index = clang_createIndex(0, 0);
  std::vector<Entry> entries;
  std::vector<std::string> errors;
  for (const std::string& file : files) {
    CXTranslationUnit unit = nullptr;
    const CXErrorCode code = clang_parseTranslationUnit2(index, file.c_str(), args, std::size(args), nullptr, 0,
                                                         CXTranslationUnit_SkipFunctionBodies, &unit);
    if (code != CXError_Success || !unit) {
      errors.push_back(file + ": libclang could not parse it (error " + std::to_string(code) + ")");
      continue;
    }
    // Declarations must parse cleanly (function bodies are skipped: they are CUDA, checked by NVRTC).
    for (unsigned i = 0; i < clang_getNumDiagnostics(unit); ++i) {
      CXDiagnostic d = clang_getDiagnostic(unit, i);
      if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error)
        errors.push_back(text_of(clang_formatDiagnostic(d, clang_defaultDiagnosticDisplayOptions())));
      clang_disposeDiagnostic(d);
    }
    Visit v{file, {}, &entries, &errors};
    clang_visitChildren(clang_getTranslationUnitCursor(unit), visit, &v);
    clang_disposeTranslationUnit(unit);
  }
  clang_disposeIndex(index);
  std::set<std::string> seen;
  for (const Entry& e : entries)
    if (!seen.insert(e.op).second) errors.push_back(e.file + ": a second entry named " + e.op);
  if (!errors.empty()) {
    for (const std::string& e : errors) std::fprintf(stderr, "dsv41_kernel_contract: %s\n", e.c_str());
    return 1;
  }
  std::ostringstream out;
  out << "// Generated by tools/kernel_contract from kernels/*.cuh. Do not edit.\n";
  out << "static const KernelContract kGeneratedContracts[] = {\n";
  for (const Entry& e : entries) {
    out << "    {\"" << e.op << "\", {";
    for (const Param& p : e.template_params) out << "\"" << p.name << "\", ";
    out << "}, {";
    for (const Param& p : e.params) out << "{\"" << p.name << "\", ParamType::" << p.type << "}, ";
    out << "}},\n";
  }
  out << "};\n";
  out << "static const KernelSource kGeneratedSources[] = {\n";
  for (const std::string& file : files) {
    const std::string text = read_file(file);
    if (text.find(")dsv41k\"") != std::string::npos) {
      std::fprintf(stderr, "dsv41_kernel_contract: %s contains the raw-string delimiter )dsv41k\"\n", file.c_str());
      return 1;
    }
    out << "    {\"" << std::filesystem::path(file).filename().string() << "\", R\"dsv41k(" << text << ")dsv41k\"},\n";
  }
  out << "};\n";
  // Write only on change, so dependants rebuild only when a kernel changed.
  if (read_file(out_path) != out.str()) {
    std::ofstream f(out_path + ".tmp", std::ios::binary);
    f << out.str();
    f.close();
    std::filesystem::rename(out_path + ".tmp", out_path);
  }
  std::printf("dsv41_kernel_contract: %zu entries from %zu headers\n", entries.size(), files.size());
  return 0;
}
