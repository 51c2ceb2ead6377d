//===- Simd.cpp - KernelBuilder calls of the simd family -------------===//
#include "enigma/Builder/Simd.h"

#include "BuilderImpl.h"

#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

using namespace mlir;

namespace enigma {

static const char *reduceName(GroupReduce op) {
  switch (op) {
  case GroupReduce::Sum: return "sum";
  case GroupReduce::Product: return "product";
  case GroupReduce::Min: return "min";
  case GroupReduce::Max: return "max";
  case GroupReduce::And: return "and";
  case GroupReduce::Or: return "or";
  case GroupReduce::Xor: return "xor";
  case GroupReduce::PrefixExclusiveSum: return "prefix_exclusive_sum";
  case GroupReduce::PrefixInclusiveSum: return "prefix_inclusive_sum";
  case GroupReduce::PrefixExclusiveProduct: return "prefix_exclusive_product";
  case GroupReduce::PrefixInclusiveProduct: return "prefix_inclusive_product";
  }
  return "?";
}

static const char *shuffleName(GroupShuffle op) {
  switch (op) {
  case GroupShuffle::Shuffle: return "shuffle";
  case GroupShuffle::ShuffleUp: return "shuffle_up";
  case GroupShuffle::ShuffleDown: return "shuffle_down";
  case GroupShuffle::ShuffleXor: return "shuffle_xor";
  case GroupShuffle::Broadcast: return "broadcast";
  }
  return "?";
}

static std::string fullName(LaneGroup group, const char *op) {
  return std::string(group == LaneGroup::Simd ? "simd_" : "quad_") + op;
}

/// Creates `enigma.<name>` on v (and lane) at the builder's location.
static Value create(const std::string &name, Value v, Value lane,
                    bool isSignedCompare) {
  KernelBuilder &k = *v.builder();
  KernelBuilder::Impl &impl = k.internals();
  OperationState state(impl.location, "enigma." + name);
  state.addOperands(raw(v));
  if (lane.valid())
    state.addOperands(raw(lane));
  state.addTypes(raw(v).getType());
  if (isSignedCompare)
    state.addAttribute("is_signed", UnitAttr::get(&impl.context));
  Operation *op = impl.builder.create(state);
  return wrap(&k, op->getResult(0), v.dtype());
}

static void checkScalar(const Value &v, const std::string &name) {
  checkOwner(v.builder(), v, name.c_str());
  if (v.lanes() != 1)
    throw EnigmaError(name + " takes a scalar; apply it to each component of "
                             "a vector");
}

Value groupReduce(LaneGroup group, GroupReduce op, Value v) {
  std::string name = fullName(group, reduceName(op));
  checkScalar(v, name);
  DType t = v.dtype();
  bool bitwise = op == GroupReduce::And || op == GroupReduce::Or ||
                 op == GroupReduce::Xor;
  if (t == DType::Bool)
    throw EnigmaError(name + " is not defined for bool; convert with "
                             "metal_cast(x, \"uint\") first");
  if (bitwise && !isInteger(t))
    throw EnigmaError(name + " takes an integer, got " + shortName(t));
  bool signedCompare = (op == GroupReduce::Min || op == GroupReduce::Max) &&
                       isInteger(t) && isSigned(t);
  return create(name, v, Value(), signedCompare);
}

Value groupShuffle(LaneGroup group, GroupShuffle op, Value v, Value lane) {
  std::string name = fullName(group, shuffleName(op));
  checkScalar(v, name);
  checkOwner(v.builder(), lane, name.c_str());
  if (!isInteger(lane.dtype()) || lane.lanes() != 1)
    throw EnigmaError(name + ": the lane operand must be an integer scalar, "
                             "got " + std::string(shortName(lane.dtype())));
  KernelBuilder &k = *v.builder();
  return create(name, v, k.cast(lane, DType::U32), false);
}

Value simdGroupCall(const std::string &metalName, Value v, Value lane) {
  for (LaneGroup g : {LaneGroup::Simd, LaneGroup::Quad}) {
    for (int i = 0; i <= int(GroupReduce::PrefixInclusiveProduct); ++i) {
      auto op = static_cast<GroupReduce>(i);
      if (fullName(g, reduceName(op)) != metalName)
        continue;
      if (lane.valid())
        throw EnigmaError(metalName + " takes one operand");
      return groupReduce(g, op, v);
    }
    for (int i = 0; i <= int(GroupShuffle::Broadcast); ++i) {
      auto op = static_cast<GroupShuffle>(i);
      if (fullName(g, shuffleName(op)) != metalName)
        continue;
      if (!lane.valid())
        throw EnigmaError(metalName + " takes a value and a lane operand");
      return groupShuffle(g, op, v, lane);
    }
  }
  throw EnigmaError("unknown simdgroup function '" + metalName + "'");
}

} // namespace enigma
