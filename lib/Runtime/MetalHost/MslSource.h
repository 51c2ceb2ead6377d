//===- MslSource.h - What the runtime reads from Metal source ---*- C++ -*-===//
//
// A small lexer over Metal Shading Language that finds what the MSL host
// runtime needs without compiling: the kernel functions and their
// parameters (address space, type, [[buffer(n)]] or thread-position
// attribute), the function constants, and the threadgroup variables declared
// in kernel bodies. It also refuses, with the line, what the runtime cannot
// run (textures, samplers, vertex and fragment functions, threadgroup memory
// parameters). Comments, strings and preprocessor lines are skipped; macros
// are not expanded.
//
// adapted() is the text handed to the compiler: the same characters on the
// same lines, except that (1) threadgroup variables in function bodies
// become `static thread_local` (one per threadgroup in flight: a group's
// fibers share an OS thread, and C++ has no automatic variables in another
// address space), and (2) `[[function_constant(i)]]` becomes the constant's
// value, with a flag for is_function_constant_defined after the `;`.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_METALHOST_MSLSOURCE_H
#define ENIGMA_LIB_RUNTIME_METALHOST_MSLSOURCE_H

#include "enigma/Runtime/Backend.h"

#include <optional>
#include <string>
#include <vector>

namespace enigma::metalhost {

/// Metal source the runtime cannot run or read (maps to EnigmaRuntimeError);
/// the message names the construct and "file:line".
struct MslSourceError : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};

struct MslParam {
  /// Threadgroup: `threadgroup T* [[threadgroup(0)]]`, the memory the
  /// launch sizes (setThreadgroupMemoryLength).
  enum class Kind { Buffer, Scalar, Position, Threadgroup };
  Kind kind = Kind::Buffer;
  std::string name;
  std::string typeText;    // as declared, e.g. "device const float *"
  std::string elementType; // e.g. "float4", "Params" (no space, cv, * or &)
  std::string addressSpace; // "device", "constant" or ""
  bool isPointer = false;
  bool isReference = false;
  unsigned bufferIndex = 0; // Buffer, Scalar
  std::string attribute;    // Position: "thread_position_in_grid", ...
  /// Threadgroup: the source range of its [[threadgroup(0)]], which the
  /// host compiler does not take (`threadgroup` is an address space there).
  size_t attributeBegin = 0, attributeEnd = 0;
  unsigned components = 1;  // Position: 1, 2 or 3 (uint, uint2, uint3)
  unsigned line = 0;
};

struct MslKernel {
  std::string name;
  unsigned line = 0;
  std::vector<MslParam> params; // in declaration order
  /// Buffer and scalar parameters in [[buffer(n)]] order: the order
  /// in which they are bound.
  std::vector<const MslParam *> bindings() const;
  /// Whether it takes the launch's threadgroup memory, [[threadgroup(0)]].
  bool takesThreadgroupMemory() const;
};

struct MslFunctionConstant {
  std::string type; // as declared
  std::string name;
  unsigned index = 0;
  unsigned line = 0;
  size_t attributeBegin = 0, attributeEnd = 0; // the [[...]] to replace
  size_t statementEnd = 0;                     // just after its ';'
};

class MslSource {
public:
  /// Reads `text`; `fileName` names it in messages. Throws MslSourceError.
  static MslSource parse(std::string text, std::string fileName);

  const std::string &text() const { return source; }
  const std::string &fileName() const { return file; }
  const std::vector<MslKernel> &kernels() const { return kernelList; }
  const std::vector<MslFunctionConstant> &functionConstants() const {
    return constants;
  }
  /// The kernel named `name`; throws MslSourceError naming the functions
  /// the source has when there is none (or it is a vertex/fragment one).
  const MslKernel &kernel(const std::string &name) const;

  /// The text to compile (see the file comment). Constants missing from
  /// `values` are undefined (zero, is_function_constant_defined false).
  std::string adapted(const ConstantValues &values) const;

private:
  std::string source;
  std::string file;
  std::vector<MslKernel> kernelList;
  std::vector<std::string> stageFunctions; // vertex/fragment/... names
  std::vector<MslFunctionConstant> constants;
  std::vector<size_t> sharedDeclarations; // offsets for "static thread_local "
};

/// The C++ spelling of a dtype in Metal ("float", "half", "uint", ...).
const char *mslTypeName(DType type);
/// The dtype of a Metal scalar or vector type name ("float4" -> F32 with
/// `width` 4); nothing for other types (structs, atomics, packed types).
std::optional<DType> dtypeOfMslType(const std::string &type, unsigned &width);

} // namespace enigma::metalhost

#endif
