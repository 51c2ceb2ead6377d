//===- msl_host_simd.h - SIMD-group and quad-group functions ----*- C++ -*-===//
//
// simd_* over a simdgroup (32 lanes) and quad_* over a quad (4 consecutive
// lanes), computed by the scheduler for the lanes that take part
// (msl_host_threads.h), in lane order:
//   - reductions and scans combine the lanes taking part in lane order;
//   - shuffles read the source lane's value; a lane whose source lane does
//     not exist or does not take part keeps its own value (Metal leaves it
//     undefined; the CPU and CUDA backends keep it too);
//   - broadcast_first / is_first use the lowest lane taking part;
//   - ballots set bit k for lane k (of the simdgroup, or of the quad).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_SIMD_H
#define ENIGMA_MSL_HOST_SIMD_H

namespace metal {
namespace enigma_detail {

/// Lanes [begin, end) of `lanes` in the same group of `Width` lanes.
template <uint32_t Width, class F>
inline void for_each_group(EnigmaMslThread *const *lanes, uint32_t count,
                           F f) {
  for (uint32_t begin = 0; begin < count;) {
    uint32_t group = lanes[begin]->index_in_simdgroup / Width;
    uint32_t end = begin + 1;
    while (end < count && lanes[end]->index_in_simdgroup / Width == group)
      ++end;
    f(begin, end);
    begin = end;
  }
}

struct op_sum { template <class T> static T apply(T a, T b) { return a + b; } };
struct op_product { template <class T> static T apply(T a, T b) { return a * b; } };
struct op_min { template <class T> static T apply(T a, T b) { return metal::min(a, b); } };
struct op_max { template <class T> static T apply(T a, T b) { return metal::max(a, b); } };
struct op_and { template <class T> static T apply(T a, T b) { return a & b; } };
struct op_or { template <class T> static T apply(T a, T b) { return a | b; } };
struct op_xor { template <class T> static T apply(T a, T b) { return a ^ b; } };

template <uint32_t Width, class Op, class T>
void resolve_reduce(EnigmaMslThread *const *lanes, uint32_t count) {
  for_each_group<Width>(lanes, count, [&](uint32_t b, uint32_t e) {
    T acc = take<T>(lanes[b]->in);
    for (uint32_t i = b + 1; i < e; ++i)
      acc = Op::apply(acc, take<T>(lanes[i]->in));
    for (uint32_t i = b; i < e; ++i)
      put(lanes[i]->out, acc);
  });
}

template <uint32_t Width, class Op, bool Inclusive, class T>
void resolve_scan(EnigmaMslThread *const *lanes, uint32_t count) {
  for_each_group<Width>(lanes, count, [&](uint32_t b, uint32_t e) {
    T acc = std::is_same<Op, op_sum>::value ? T(0) : T(1);
    for (uint32_t i = b; i < e; ++i) {
      T v = take<T>(lanes[i]->in);
      if (!Inclusive)
        put(lanes[i]->out, acc);
      acc = Op::apply(acc, v);
      if (Inclusive)
        put(lanes[i]->out, acc);
    }
  });
}

enum class shuffle_kind {
  index, up, down, xor_, rotate_up, rotate_down, fill_up, fill_down
};

/// Shuffles within groups of Width lanes. For the fill forms the lane's
/// `in` holds (data, filling data) and `operand` is delta | modulo << 16.
template <uint32_t Width, shuffle_kind Kind, class T>
void resolve_shuffle(EnigmaMslThread *const *lanes, uint32_t count) {
  for_each_group<Width>(lanes, count, [&](uint32_t b, uint32_t e) {
    int32_t at[Width]; // lane within the group -> entry of `lanes`, or -1
    for (uint32_t k = 0; k < Width; ++k)
      at[k] = -1;
    for (uint32_t i = b; i < e; ++i)
      at[lanes[i]->index_in_simdgroup % Width] = int32_t(i);
    for (uint32_t i = b; i < e; ++i) {
      const uint32_t me = lanes[i]->index_in_simdgroup % Width;
      const uint32_t a = lanes[i]->operand;
      uint32_t src = me;
      bool fill = false;
      bool ok = true;
      switch (Kind) {
      case shuffle_kind::index: src = a % Width; break;
      case shuffle_kind::xor_: src = me ^ (a % Width); break;
      case shuffle_kind::up: ok = a <= me; src = me - a; break;
      case shuffle_kind::down: ok = a < Width - me; src = me + a; break;
      case shuffle_kind::rotate_up: src = (me + Width - a % Width) % Width; break;
      case shuffle_kind::rotate_down: src = (me + a) % Width; break;
      case shuffle_kind::fill_up:
      case shuffle_kind::fill_down: {
        uint32_t delta = a & 0xffffu, modulo = a >> 16;
        if (modulo == 0 || modulo > Width)
          modulo = Width;
        uint32_t base = me / modulo * modulo, within = me % modulo;
        if (Kind == shuffle_kind::fill_down) {
          fill = within + delta >= modulo;
          src = base + (within + delta) % modulo;
        } else {
          fill = within < delta;
          src = base + (within + modulo - delta % modulo) % modulo;
        }
        break;
      }
      }
      const int32_t from = ok && src < Width ? at[src] : -1;
      const EnigmaMslThread *source = from >= 0 ? lanes[from] : lanes[i];
      T value = take<T>(source->in + (fill && from >= 0 ? sizeof(T) : 0));
      put(lanes[i]->out, value);
    }
  });
}

template <uint32_t Width, class T>
void resolve_broadcast_first(EnigmaMslThread *const *lanes, uint32_t count) {
  for_each_group<Width>(lanes, count, [&](uint32_t b, uint32_t e) {
    T value = take<T>(lanes[b]->in);
    for (uint32_t i = b; i < e; ++i)
      put(lanes[i]->out, value);
  });
}

template <uint32_t Width>
void resolve_is_first(EnigmaMslThread *const *lanes, uint32_t count) {
  for_each_group<Width>(lanes, count, [&](uint32_t b, uint32_t e) {
    for (uint32_t i = b; i < e; ++i)
      put(lanes[i]->out, bool(i == b));
  });
}

/// Ballot: bit (lane % Width) for every lane taking part whose bool is set.
template <uint32_t Width>
void resolve_ballot(EnigmaMslThread *const *lanes, uint32_t count) {
  for_each_group<Width>(lanes, count, [&](uint32_t b, uint32_t e) {
    uint64_t bits = 0;
    for (uint32_t i = b; i < e; ++i)
      if (take<bool>(lanes[i]->in))
        bits |= uint64_t(1) << (lanes[i]->index_in_simdgroup % Width);
    for (uint32_t i = b; i < e; ++i)
      put(lanes[i]->out, bits);
  });
}

/// Metal's simdgroup functions take scalars and vectors of its arithmetic
/// types (not bool, not structs).
template <class T> struct simd_value : std::false_type {};
template <> struct simd_value<float> : std::true_type {};
template <> struct simd_value<half> : std::true_type {};
template <> struct simd_value<bfloat> : std::true_type {};
template <> struct simd_value<int> : std::true_type {};
template <> struct simd_value<uint> : std::true_type {};
template <> struct simd_value<short> : std::true_type {};
template <> struct simd_value<ushort> : std::true_type {};
template <> struct simd_value<char> : std::true_type {};
template <> struct simd_value<signed char> : std::true_type {};
template <> struct simd_value<uchar> : std::true_type {};
template <> struct simd_value<long> : std::true_type {};
template <> struct simd_value<ulong> : std::true_type {};
template <class T, int N> struct simd_value<vec<T, N>> : simd_value<T> {};
template <class T>
constexpr bool simd_value_v = simd_value<std::remove_cv_t<T>>::value;
/// Shuffles and broadcasts also move bools.
template <class T> struct shuffle_value : simd_value<T> {};
template <> struct shuffle_value<bool> : std::true_type {};
template <int N> struct shuffle_value<vec<bool, N>> : std::true_type {};
template <class T>
constexpr bool shuffle_value_v = shuffle_value<std::remove_cv_t<T>>::value;
template <class T> struct scalar_of { using type = T; };
template <class T, int N> struct scalar_of<vec<T, N>> { using type = T; };
template <class T>
constexpr bool simd_integer_v =
    simd_value_v<T> && std::is_integral<typename scalar_of<T>::type>::value;

} // namespace enigma_detail

/// A ballot: one bit per lane.
struct simd_vote {
  using vote_t = ulong;
  explicit constexpr simd_vote(vote_t v = 0) : bits(v) {}
  explicit constexpr operator vote_t() const { return bits; }
  constexpr bool all() const { return bits == 0xffffffffull; }
  constexpr bool any() const { return bits != 0; }

private:
  vote_t bits;
};

struct quad_vote {
  using vote_t = ushort;
  explicit constexpr quad_vote(vote_t v = 0) : bits(v) {}
  explicit constexpr operator vote_t() const { return bits; }
  constexpr bool all() const { return bits == 0xf; }
  constexpr bool any() const { return bits != 0; }

private:
  vote_t bits;
};

#define ENIGMA_MSL_VALUE_FN(T) template <class T, std::enable_if_t<enigma_detail::simd_value_v<T>, int> = 0>
#define ENIGMA_MSL_INTEGER_FN(T) template <class T, std::enable_if_t<enigma_detail::simd_integer_v<T>, int> = 0>
#define ENIGMA_MSL_SHUFFLE_FN(T) template <class T, std::enable_if_t<enigma_detail::shuffle_value_v<T>, int> = 0>

#define ENIGMA_MSL_GROUP_FUNCTIONS(group, width)                              \
  ENIGMA_MSL_VALUE_FN(T) ENIGMA_MSL_INLINE T group##_sum(T data) {            \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_sum, T>, data); \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T) ENIGMA_MSL_INLINE T group##_product(T data) {        \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_product, T>,  \
        data);                                                                 \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T) ENIGMA_MSL_INLINE T group##_min(T data) {            \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_min, T>, data); \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T) ENIGMA_MSL_INLINE T group##_max(T data) {            \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_max, T>, data); \
  }                                                                            \
  ENIGMA_MSL_INTEGER_FN(T) ENIGMA_MSL_INLINE T group##_and(T data) {          \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_and, T>, data); \
  }                                                                            \
  ENIGMA_MSL_INTEGER_FN(T) ENIGMA_MSL_INLINE T group##_or(T data) {           \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_or, T>, data); \
  }                                                                            \
  ENIGMA_MSL_INTEGER_FN(T) ENIGMA_MSL_INLINE T group##_xor(T data) {          \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_xor, T>, data); \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T)                                                       \
  ENIGMA_MSL_INLINE T group##_prefix_exclusive_sum(T data) {                  \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_scan<width, enigma_detail::op_sum, false, T>, \
        data);                                                                 \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T)                                                       \
  ENIGMA_MSL_INLINE T group##_prefix_inclusive_sum(T data) {                  \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_scan<width, enigma_detail::op_sum, true, T>,  \
        data);                                                                 \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T)                                                       \
  ENIGMA_MSL_INLINE T group##_prefix_exclusive_product(T data) {              \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_scan<width, enigma_detail::op_product, false, \
                                     T>,                                       \
        data);                                                                 \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T)                                                       \
  ENIGMA_MSL_INLINE T group##_prefix_inclusive_product(T data) {              \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_scan<width, enigma_detail::op_product, true,  \
                                     T>,                                       \
        data);                                                                 \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T) ENIGMA_MSL_INLINE T group##_shuffle(T data,          \
                                                             ushort lane) {    \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<                                       \
            width, enigma_detail::shuffle_kind::index, T>,                    \
        data, lane);                                                           \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T) ENIGMA_MSL_INLINE T group##_broadcast(T data,        \
                                                               ushort lane) {  \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<                                       \
            width, enigma_detail::shuffle_kind::index, T>,                    \
        data, lane);                                                           \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T) ENIGMA_MSL_INLINE T group##_shuffle_up(T data,       \
                                                                ushort delta) { \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<width,                                 \
                                        enigma_detail::shuffle_kind::up, T>,  \
        data, delta);                                                          \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T)                                                     \
  ENIGMA_MSL_INLINE T group##_shuffle_down(T data, ushort delta) {            \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<width,                                 \
                                        enigma_detail::shuffle_kind::down, T>, \
        data, delta);                                                          \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T) ENIGMA_MSL_INLINE T group##_shuffle_xor(T data,      \
                                                                 ushort mask) { \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<width,                                 \
                                        enigma_detail::shuffle_kind::xor_, T>, \
        data, mask);                                                           \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T)                                                     \
  ENIGMA_MSL_INLINE T group##_shuffle_rotate_up(T data, ushort delta) {       \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<                                       \
            width, enigma_detail::shuffle_kind::rotate_up, T>,                \
        data, delta);                                                          \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T)                                                     \
  ENIGMA_MSL_INLINE T group##_shuffle_rotate_down(T data, ushort delta) {     \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<                                       \
            width, enigma_detail::shuffle_kind::rotate_down, T>,              \
        data, delta);                                                          \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T)                                                       \
  ENIGMA_MSL_INLINE T group##_shuffle_and_fill_up(                            \
      T data, T filling_data, ushort delta, ushort modulo = width) {          \
    T pair[2] = {data, filling_data};                                          \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<                                       \
            width, enigma_detail::shuffle_kind::fill_up, T>,                  \
        pair, uint32_t(delta) | uint32_t(modulo) << 16);                       \
  }                                                                            \
  ENIGMA_MSL_VALUE_FN(T)                                                       \
  ENIGMA_MSL_INLINE T group##_shuffle_and_fill_down(                          \
      T data, T filling_data, ushort delta, ushort modulo = width) {          \
    T pair[2] = {data, filling_data};                                          \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_shuffle<                                       \
            width, enigma_detail::shuffle_kind::fill_down, T>,                \
        pair, uint32_t(delta) | uint32_t(modulo) << 16);                       \
  }                                                                            \
  ENIGMA_MSL_SHUFFLE_FN(T) ENIGMA_MSL_INLINE T group##_broadcast_first(T data) { \
    return enigma_detail::collective<T>(                                      \
        &enigma_detail::resolve_broadcast_first<width, T>, data);             \
  }                                                                            \
  ENIGMA_MSL_INLINE bool group##_is_first() {                                 \
    return enigma_detail::collective<bool>(                                   \
        &enigma_detail::resolve_is_first<width>, false);                      \
  }                                                                            \
  ENIGMA_MSL_INLINE bool group##_is_helper_thread() { return false; }         \
  ENIGMA_MSL_INLINE group##_vote group##_ballot(bool predicate) {             \
    return group##_vote(group##_vote::vote_t(enigma_detail::collective<uint64_t>( \
        &enigma_detail::resolve_ballot<width>, predicate)));                  \
  }                                                                            \
  ENIGMA_MSL_INLINE group##_vote group##_active_threads_mask() {              \
    return group##_vote(group##_vote::vote_t(enigma_detail::collective<uint64_t>( \
        &enigma_detail::resolve_ballot<width>, true)));                       \
  }                                                                            \
  ENIGMA_MSL_INLINE bool group##_all(bool predicate) {                        \
    return enigma_detail::collective<bool>(                                   \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_and, bool>,   \
        predicate);                                                            \
  }                                                                            \
  ENIGMA_MSL_INLINE bool group##_any(bool predicate) {                        \
    return enigma_detail::collective<bool>(                                   \
        &enigma_detail::resolve_reduce<width, enigma_detail::op_or, bool>,    \
        predicate);                                                            \
  }

ENIGMA_MSL_GROUP_FUNCTIONS(simd, 32u)
ENIGMA_MSL_GROUP_FUNCTIONS(quad, 4u)
#undef ENIGMA_MSL_GROUP_FUNCTIONS
#undef ENIGMA_MSL_VALUE_FN
#undef ENIGMA_MSL_INTEGER_FN
#undef ENIGMA_MSL_SHUFFLE_FN

} // namespace metal

#endif
