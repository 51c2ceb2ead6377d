//===- Swizzle.cpp - CuTe's Swizzle<B,M,S> and swizzled layouts ------------===//
#include "enigma/Layout/Swizzle.h"

#include "enigma/Support/Error.h"

#include <cstdlib>

namespace enigma::layout {

Swizzle::Swizzle(int bits, int base, int shift)
    : bits_(bits), base_(base), shift_(shift) {
  if (bits < 0 || base < 0)
    throw EnigmaError("Swizzle<" + std::to_string(bits) + "," +
                      std::to_string(base) + "," + std::to_string(shift) +
                      ">: bits and base must be >= 0");
  if (std::abs(shift) < bits)
    throw EnigmaError("Swizzle<" + std::to_string(bits) + "," +
                      std::to_string(base) + "," + std::to_string(shift) +
                      ">: |shift| must be at least bits, or the read and "
                      "flipped bits overlap");
  if (bits + base + std::abs(shift) > 62)
    throw EnigmaError("Swizzle<" + std::to_string(bits) + "," +
                      std::to_string(base) + "," + std::to_string(shift) +
                      ">: the masks do not fit in 63 bits");
}

int64_t Swizzle::yyyMask() const {
  return ((int64_t(1) << bits_) - 1) << (base_ + std::max(0, shift_));
}

int64_t Swizzle::zzzMask() const {
  return ((int64_t(1) << bits_) - 1) << (base_ - std::min(0, shift_));
}

int64_t Swizzle::operator()(int64_t offset) const {
  int64_t read = offset & yyyMask();
  return offset ^ (shift_ >= 0 ? read >> shift_ : read << -shift_);
}

std::string Swizzle::str() const {
  return "Sw<" + std::to_string(bits_) + "," + std::to_string(base_) + "," +
         std::to_string(shift_) + ">";
}

SwizzledLayout::SwizzledLayout(Swizzle swizzle, int64_t offset, Layout layout)
    : swizzle_(swizzle), offset_(offset), layout_(std::move(layout)) {
  if (offset < 0)
    throw EnigmaError("SwizzledLayout: offset " + std::to_string(offset) +
                      " must be >= 0");
}

int64_t SwizzledLayout::operator()(int64_t index) const {
  return swizzle_(offset_ + layout_(index));
}

int64_t SwizzledLayout::operator()(const IntTuple &coord) const {
  return swizzle_(offset_ + layout_(coord));
}

std::string SwizzledLayout::str() const {
  return swizzle_.str() + " o " + std::to_string(offset_) + " o " +
         layout_.str();
}

SwizzledLayout composition(const SwizzledLayout &a, const Tiler &tiler) {
  return SwizzledLayout(a.swizzle(), a.offset(),
                        composition(a.layout(), tiler));
}

} // namespace enigma::layout
