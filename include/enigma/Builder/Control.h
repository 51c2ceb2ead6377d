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
#include <string>
#include <vector>

namespace enigma {

/// Starts `while (true) { <condition>; if (!cond) break; <body> }` carrying
/// `inits`; returns the carried values as the condition sees them.
std::vector<Value> beginWhile(KernelBuilder &k, const std::vector<Value> &inits);
/// beginWhile for a loop whose body is traced in its condition region,
/// before the test (`do { body } while (test)`: a `while` statement of the
/// Python front end); marks the op with kDoWhileAttr for messages.
std::vector<Value> beginDoWhile(KernelBuilder &k,
                                const std::vector<Value> &inits);
/// The unit attribute beginDoWhile sets.
inline constexpr const char *kDoWhileAttr = "enigma.do_while";
/// Ends the condition of the innermost while: the loop continues while
/// `cond` holds and hands `forwarded` (one per carried value, same dtypes) to
/// the body. Returns the carried values as the body sees them.
std::vector<Value> whileCondition(KernelBuilder &k, Value cond,
                                  const std::vector<Value> &forwarded);
/// Ends the body of the innermost while; `next` are the carried values for
/// the next test. Returns the values after the loop (the ones forwarded by
/// the last, failing test).
std::vector<Value> endWhile(KernelBuilder &k, const std::vector<Value> &next);

/// A variable first given a value inside an open if or loop ("late"): the
/// construct gains one more result for it when it ends. Where the value was
/// not given (the other arm of an if, the start of a loop) the construct
/// uses a zero of `dtype` x `lanes`; the front end reads such a value only
/// where it was given (behind a flag: the value a helper returns early).
struct LateType {
  DType dtype = DType::F32;
  unsigned lanes = 1;
};

/// endIf for an if whose arms gave late values: `thenLate[i]` (from the then
/// arm, still valid at its end) and `elseLate[i]` (from the else arm being
/// ended), each converted to `types[i]`, or an empty Value for a zero.
/// Returns the if's results: the carried values, then the late ones.
std::vector<Value> endIfLate(KernelBuilder &k, const std::vector<Value> &last,
                             const std::vector<Value> &thenLate,
                             const std::vector<Value> &elseLate,
                             const std::vector<LateType> &types);
/// endFor for a loop whose body gave late values (`late[i]`, its value at
/// the end of the body): each becomes one more carried value, zero before
/// the first iteration.
std::vector<Value> endForLate(KernelBuilder &k, const std::vector<Value> &next,
                              const std::vector<Value> &late,
                              const std::vector<LateType> &types);
/// endWhile for a while whose condition region (`fromCondition[i]`) or body
/// (`fromBody[i]`) gave late values; an empty Value forwards the carried
/// value unchanged there. Each becomes one more carried value, zero before
/// the first test, and one more result.
std::vector<Value> endWhileLate(KernelBuilder &k,
                                const std::vector<Value> &next,
                                const std::vector<Value> &fromCondition,
                                const std::vector<Value> &fromBody,
                                const std::vector<LateType> &types);

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

/// Index `dim` of an access to a buffer declared with a shape must be below
/// `extent` (both integers): an enigma.index_check, a check in
/// bounds-checked mode and nothing otherwise. `buffer`, `shape` ("(H, W)")
/// and `extentName` ("W") name it in the report.
void checkIndex(KernelBuilder &k, Value index, Value extent, unsigned dim,
                const std::string &buffer, const std::string &shape,
                const std::string &extentName);

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
