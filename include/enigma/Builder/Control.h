//===- Control.h - Loops, guarded memory and register arrays -----*- C++ -*-===//
//
// The control-flow calls beyond KernelBuilder's beginFor/beginIf: while
// loops (scf.while), branch-free guarded loads, guarded stores and per-thread
// register arrays (memref.alloca in the thread address space).
//
//   auto args = beginWhile(k, {i0});            // before region: i
//   auto body = whileCondition(k, args[0] < n, args); // after region: i
//   auto out = endWhile(k, {body[0] + 1});       // results: i
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_CONTROL_H
#define ENIGMA_BUILDER_CONTROL_H

#include "enigma/Builder/KernelBuilder.h"

#include <cstdint>
#include <vector>

namespace enigma {

/// Starts `while (true) { <condition>; if (!cond) break; <body> }` carrying
/// `inits`; returns the carried values as the condition sees them.
std::vector<Value> beginWhile(KernelBuilder &k, const std::vector<Value> &inits);
/// Ends the condition of the innermost while: the loop continues while
/// `cond` holds and hands `forwarded` (one per carried value, same dtypes) to
/// the body. Returns the carried values as the body sees them.
std::vector<Value> whileCondition(KernelBuilder &k, Value cond,
                                  const std::vector<Value> &forwarded);
/// Ends the body of the innermost while; `next` are the carried values for
/// the next test. Returns the values after the loop (the ones forwarded by
/// the last, failing test).
std::vector<Value> endWhile(KernelBuilder &k, const std::vector<Value> &next);

/// `cond ? ifTrue : ifFalse` without a branch (operands of one dtype).
Value select(KernelBuilder &k, Value cond, Value ifTrue, Value ifFalse);

/// `mask ? buffer[index] : fallback`, branch-free: the load reads element 0
/// when `mask` is false, so it never reads past the end of a non-empty
/// buffer whatever `index` holds.
Value loadIf(KernelBuilder &k, const Buffer &buffer, Value index, Value mask,
             Value fallback);
/// `if (mask) buffer[index] = value;`
void storeIf(KernelBuilder &k, const Buffer &buffer, Value index, Value value,
             Value mask);

/// A per-thread array of `size` elements (registers), indexed by constants.
class RegisterArray {
public:
  RegisterArray() = default;
  DType dtype() const { return type; }
  int64_t size() const { return count; }
  void *handle() const { return impl; }

private:
  friend RegisterArray allocRegisters(KernelBuilder &, DType, int64_t, double);
  RegisterArray(void *impl, DType type, int64_t count)
      : impl(impl), type(type), count(count) {}
  void *impl = nullptr;
  DType type = DType::F32;
  int64_t count = 0;
};

/// Allocates a register array with every element set to `fill`.
RegisterArray allocRegisters(KernelBuilder &k, DType dtype, int64_t size,
                             double fill = 0);
/// Reads / writes element `index` (0 <= index < size, else EnigmaError).
Value loadRegister(KernelBuilder &k, const RegisterArray &regs, int64_t index);
void storeRegister(KernelBuilder &k, const RegisterArray &regs, int64_t index,
                   Value value);

} // namespace enigma

#endif
