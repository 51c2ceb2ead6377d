//===- Harness.cpp --------------------------------------------------------===//
#include "Harness.h"

#include <map>

namespace enigma::metalhost {
namespace {

/// The three values (x, y, z) of a thread-position attribute.
std::string positionValues(const std::string &attribute) {
  static const std::map<std::string, std::string> values = {
      {"thread_position_in_grid", "enigma_self->position_in_grid"},
      {"thread_position_in_threadgroup", "enigma_self->position_in_threadgroup"},
      {"threadgroup_position_in_grid", "g.threadgroup_position_in_grid"},
      {"threads_per_threadgroup", "g.threads_per_threadgroup"},
      {"threads_per_grid", "g.threads_per_grid"},
      {"grid_size", "g.threads_per_grid"},
      {"threadgroups_per_grid", "g.threadgroups_per_grid"},
      {"dispatch_threads_per_threadgroup", "g.dispatch_threads_per_threadgroup"},
  };
  auto vector = values.find(attribute);
  if (vector != values.end())
    return vector->second + "[0], " + vector->second + "[1], " +
           vector->second + "[2]";
  static const std::map<std::string, std::string> scalars = {
      {"grid_origin", "0u"},
      {"thread_index_in_threadgroup", "enigma_self->index_in_threadgroup"},
      {"thread_index_in_simdgroup", "enigma_self->index_in_simdgroup"},
      {"thread_index_in_quadgroup", "enigma_self->index_in_simdgroup % 4u"},
      {"simdgroup_index_in_threadgroup", "enigma_self->simdgroup_index"},
      {"quadgroup_index_in_threadgroup", "enigma_self->index_in_threadgroup / 4u"},
      {"threads_per_simdgroup", "32u"},
      {"thread_execution_width", "32u"},
      {"simdgroups_per_threadgroup", "g.simdgroups_per_threadgroup"},
      {"quadgroups_per_threadgroup", "(g.thread_count + 3u) / 4u"},
      {"dispatch_simdgroups_per_threadgroup",
       "(g.dispatch_threads_per_threadgroup[0] * "
       "g.dispatch_threads_per_threadgroup[1] * "
       "g.dispatch_threads_per_threadgroup[2] + 31u) / 32u"},
      {"dispatch_quadgroups_per_threadgroup",
       "(g.dispatch_threads_per_threadgroup[0] * "
       "g.dispatch_threads_per_threadgroup[1] * "
       "g.dispatch_threads_per_threadgroup[2] + 3u) / 4u"},
  };
  const std::string &value = scalars.at(attribute);
  return value + ", 0u, 0u";
}

std::string positionType(const MslParam &p) {
  std::string base = p.elementType.rfind("ushort", 0) == 0 ||
                             p.elementType == "uint16_t" ||
                             p.elementType == "unsignedshort"
                         ? "ushort"
                         : "uint";
  return "::metal::" + base +
         (p.components > 1 ? std::to_string(p.components) : "");
}

/// `device float *` for `device float &`.
std::string pointerTo(const std::string &referenceType) {
  std::string type = referenceType;
  size_t amp = type.rfind('&');
  if (amp != std::string::npos)
    type[amp] = '*';
  return type;
}
} // namespace

std::string generateHarness(const MslKernel &kernel, const std::string &entry) {
  std::vector<const MslParam *> bound = kernel.bindings();
  std::map<const MslParam *, size_t> slot;
  for (size_t i = 0; i < bound.size(); ++i)
    slot[bound[i]] = i;

  std::string out;
  out += "\n#line 1 \"enigma-msl-harness\"\n";
  if (entry == "enigma_msl_thread_main")
    out += "extern \"C\" __attribute__((visibility(\"default\"))) uint32_t\n"
           "enigma_msl_abi_version() { return ENIGMA_MSL_ABI_VERSION; }\n";
  out += "extern \"C\" __attribute__((visibility(\"default\"))) void\n" +
         entry + "(void *const *enigma_args, EnigmaMslThread *enigma_self) {\n";
  out += "  ::metal::enigma_detail::current = enigma_self;\n";
  out += "  const EnigmaMslGroup &g = *enigma_self->group;\n";
  out += "  (void)g;\n";
  out += "  ::" + kernel.name + "(";
  const char *separator = "\n      ";
  for (const MslParam &p : kernel.params) {
    out += separator;
    separator = ",\n      ";
    if (p.kind == MslParam::Kind::Position) {
      out += "::metal::enigma_detail::position<" + positionType(p) + ">(" +
             positionValues(p.attribute) + ")";
    } else if (p.kind == MslParam::Kind::Threadgroup) {
      out += "(" + p.typeText + ")g.threadgroup_memory";
    } else if (p.isPointer) {
      out += "(" + p.typeText + ")enigma_args[" + std::to_string(slot[&p]) +
             "]";
    } else {
      out += "*(" + pointerTo(p.typeText) + ")enigma_args[" +
             std::to_string(slot[&p]) + "]";
    }
  }
  out += ");\n}\n";
  return out;
}

} // namespace enigma::metalhost
