//===- RingEmulationTest.cpp - The CUDA pipeline ring on emulated mbarriers ===//
//
// enigma_cuda_pipeline.cuh compiled for the host with its PTX primitives
// (mbarrier init / arrive / expect-tx / try_wait.parity, the TMA's 2-D box
// copy with its zero fill, 128-byte swizzle and cluster multicast, remote
// arrives, the cluster rank) replaced by emulations written from the PTX
// ISA's definitions, and run by real threads: per threadgroup one
// producer thread (its warp) and several consumer threads (their warps),
// with a "TMA engine" thread that lands copies late and in any order.
//
// Each consumer checks that the stage it waited for holds exactly the box
// of its iteration (so no copy landed early in a stage still being read,
// and none was missed), with 2 to 4 stages, in clusters of 1 and 2 with a
// multicast operand, through the TMA and through the producer warp's
// fallback copies. A pipeline that commits one stage too few must not
// hang: the checked wait reports its site, stage and phase.
//
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

// --- What the prelude needs from CUDA, on the host --------------------------
#define __device__
#define __forceinline__ inline
#define ENIGMA_RING_EMULATION 1
#define ENIGMA_RING_TIMEOUT_NS 300000000ull

namespace emu {
struct Dim {
  unsigned x = 0, y = 0, z = 0;
};
} // namespace emu
thread_local emu::Dim threadIdx, blockIdx;

namespace enigma_mma {
typedef unsigned long long u64;
unsigned smem(const void *p);
} // namespace enigma_mma

inline void __threadfence_system() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __syncwarp() {}
inline void __syncthreads() {}

template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs,
          class T>
void enigma_copy_tile_async(T *dst, enigma_mma::u64 dst_base, const T *src,
                            enigma_mma::u64 src_off, enigma_mma::u64 src_ld,
                            enigma_mma::u64 valid_rows,
                            enigma_mma::u64 valid_cols, unsigned tid,
                            unsigned nthreads);

namespace enigma_ring {
void init(unsigned bar, unsigned count);
bool try_wait(unsigned bar, unsigned parity);
void arrive(unsigned bar);
void arrive_expect_tx(unsigned bar, unsigned bytes);
void arrive_in(unsigned bar, unsigned rank);
unsigned cluster_rank();
void cluster_sync();
unsigned long long now_ns();
void copies_done();
void init_done();
unsigned claim(unsigned *word);
void count(unsigned *word);
void load_box(unsigned dst, const void *map, int c, int r, unsigned bar,
              unsigned short mask);
} // namespace enigma_ring

#include "enigma_cuda_pipeline.cuh"

// --- The emulated machine -----------------------------------------------------
namespace {

using u16 = uint16_t;

/// Shared memory of the blocks of one cluster: addresses are offsets into
/// each block's arena.
constexpr unsigned kArena = 1 << 20;
struct Block {
  std::vector<unsigned char> arena = std::vector<unsigned char>(kArena);
};
std::vector<Block> g_blocks;
thread_local unsigned g_rank = 0; // the block this thread belongs to

/// An mbarrier (PTX ISA: pending arrivals and a transaction count; a phase
/// completes when both reach zero, then the arrivals start again).
struct Barrier {
  unsigned expected = 0, pending = 0;
  long long tx = 0;
  unsigned phase = 0; // phases completed
};
std::mutex g_lock;
std::condition_variable g_changed;
std::map<std::pair<unsigned, unsigned>, Barrier> g_bars; // (block, address)

Barrier &barrierAt(unsigned rank, unsigned bar) {
  auto it = g_bars.find({rank, bar});
  if (it == g_bars.end())
    throw std::runtime_error("an mbarrier used before init");
  return it->second;
}
void settle(Barrier &b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.expected;
  }
  g_changed.notify_all();
}

/// A tensor map: a rows x cols matrix of 16-bit elements with pitch ld,
/// boxes of boxRows x boxCols, the 128-byte swizzle or none.
struct EmuMap {
  const u16 *data;
  unsigned rows, cols, ld, boxRows, boxCols;
  bool swizzle128;
};

unsigned swizzled(unsigned offset, bool on) {
  // Swizzle<3, 3, 3> of 16-bit element offsets: the 128-byte pattern.
  return on ? offset ^ ((offset >> 3) & (7u << 3)) : offset;
}

/// The TMA engine: copies land later, in any order, each completing its
/// bytes on its barrier in every destination block.
struct Copy {
  std::vector<unsigned> ranks;
  unsigned dst, bar;
  const EmuMap *map;
  int c, r;
};
std::deque<Copy> g_queue;
std::atomic<bool> g_stop{false};
thread_local std::mt19937 g_random(7);

void land(const Copy &copy) {
  const EmuMap &m = *copy.map;
  std::vector<u16> box(m.boxRows * m.boxCols);
  for (unsigned i = 0; i < m.boxRows; ++i)
    for (unsigned j = 0; j < m.boxCols; ++j) {
      long long r = copy.r + int(i), c = copy.c + int(j);
      box[swizzled(i * m.boxCols + j, m.swizzle128)] =
          (r < m.rows && c < m.cols && r >= 0 && c >= 0)
              ? m.data[r * m.ld + c]
              : 0;
    }
  std::lock_guard<std::mutex> hold(g_lock);
  for (unsigned rank : copy.ranks) {
    std::memcpy(&g_blocks[rank].arena[copy.dst], box.data(), box.size() * 2);
    Barrier &b = barrierAt(rank, copy.bar);
    b.tx -= static_cast<long long>(box.size() * 2);
    settle(b);
  }
}

void engine() {
  while (!g_stop) {
    Copy copy;
    {
      std::unique_lock<std::mutex> hold(g_lock);
      if (g_queue.empty()) {
        g_changed.wait_for(hold, std::chrono::microseconds(200));
        continue;
      }
      // Any queued copy, not the oldest: copies complete out of order.
      size_t i = g_random() % g_queue.size();
      copy = g_queue[i];
      g_queue.erase(g_queue.begin() + long(i));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20 + g_random() % 200));
    land(copy);
  }
}

unsigned g_cluster = 1;

} // namespace

unsigned enigma_mma::smem(const void *p) {
  auto at = static_cast<const unsigned char *>(p);
  for (Block &b : g_blocks)
    if (at >= b.arena.data() && at < b.arena.data() + kArena)
      return unsigned(at - b.arena.data());
  throw std::runtime_error("not an address in shared memory");
}

namespace enigma_ring {
void init(unsigned bar, unsigned count) {
  std::lock_guard<std::mutex> hold(g_lock);
  Barrier &b = g_bars[{g_rank, bar}];
  b = Barrier{count, count, 0, 0};
}
bool try_wait(unsigned bar, unsigned parity) {
  std::unique_lock<std::mutex> hold(g_lock);
  // The phase of that parity has completed when the current (incomplete)
  // phase has the other parity.
  if ((barrierAt(g_rank, bar).phase & 1u) != parity)
    return true;
  g_changed.wait_for(hold, std::chrono::microseconds(100));
  return (barrierAt(g_rank, bar).phase & 1u) != parity;
}
void arrive(unsigned bar) { arrive_in(bar, g_rank); }
void arrive_expect_tx(unsigned bar, unsigned bytes) {
  std::lock_guard<std::mutex> hold(g_lock);
  Barrier &b = barrierAt(g_rank, bar);
  if (b.pending == 0)
    throw std::runtime_error("an arrival beyond the expected count");
  b.tx += bytes;
  --b.pending;
  settle(b);
}
void arrive_in(unsigned bar, unsigned rank) {
  std::lock_guard<std::mutex> hold(g_lock);
  Barrier &b = barrierAt(rank, bar);
  if (b.pending == 0)
    throw std::runtime_error("an arrival beyond the expected count");
  --b.pending;
  settle(b);
}
unsigned cluster_rank() { return g_rank; }
void cluster_sync() {}
unsigned long long now_ns() {
  return static_cast<unsigned long long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}
void copies_done() {}
void init_done() {}
unsigned claim(unsigned *word) {
  return reinterpret_cast<std::atomic<unsigned> *>(word)->fetch_or(1u);
}
void count(unsigned *word) {
  reinterpret_cast<std::atomic<unsigned> *>(word)->fetch_add(1u);
}
void load_box(unsigned dst, const void *map, int c, int r, unsigned bar,
              unsigned short mask) {
  Copy copy{{}, dst, bar, static_cast<const EmuMap *>(map), c, r};
  if (mask == 0)
    copy.ranks.push_back(g_rank);
  for (unsigned rank = 0; rank < 16; ++rank)
    if (mask >> rank & 1u)
      copy.ranks.push_back(rank);
  std::lock_guard<std::mutex> hold(g_lock);
  g_queue.push_back(copy);
  g_changed.notify_all();
}
} // namespace enigma_ring

/// The producer warp's fallback copy: each lane its chunks, now.
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs,
          class T>
void enigma_copy_tile_async(T *dst, enigma_mma::u64 dst_base, const T *src,
                            enigma_mma::u64 src_off, enigma_mma::u64 src_ld,
                            enigma_mma::u64 valid_rows,
                            enigma_mma::u64 valid_cols, unsigned tid,
                            unsigned nthreads) {
  static_assert(Bs == 0 && DstLd == Cols, "dense boxes in this test");
  std::lock_guard<std::mutex> hold(g_lock);
  for (unsigned i = tid; i < unsigned(Rows * Cols); i += nthreads) {
    unsigned r = i / Cols, c = i % Cols;
    dst[dst_base + swizzled(i, S0 != 0)] =
        (r < valid_rows && c < valid_cols) ? src[src_off + r * src_ld + c]
                                           : T(0);
  }
}

// --- The pipelines ------------------------------------------------------------
namespace {

constexpr int kBoxRows = 16, kBoxCols = 64; // one 128-byte row per box row
constexpr int kBox = kBoxRows * kBoxCols;

struct RingSetup {
  int stages = 2, iterations = 37, warps = 3;
  bool tma = true, multicast = false, commitOneLess = false;
  /// Buffer 1 written by this many producer threads, each arriving on the
  /// full barrier (a transposing copy beside the TMA's copy of buffer 0).
  int producerThreads = 0;
};

/// Box i of the matrix (rows of 64 elements, its value the element's
/// position), as the stage should hold it (unswizzled).
u16 expected(int i, int r, int c, unsigned rows, unsigned cols) {
  unsigned gr = unsigned(i * kBoxRows + r), gc = unsigned(c);
  return gr < rows && gc < cols ? u16((gr * 131 + gc) & 0xffff) : u16(0);
}

template <int S> struct RingRun {
  RingSetup setup;
  std::vector<u16> matrix;
  unsigned rows, cols;
  EmuMap shared{}, own{};
  std::atomic<int> failures{0};
  std::string firstFailure;
  std::mutex failureLock;
  unsigned record[8] = {};

  explicit RingRun(RingSetup s) : setup(s) {
    rows = unsigned(setup.iterations * kBoxRows - 5); // a partial last box
    cols = kBoxCols - 3;                              // and columns
    matrix.resize(size_t(rows) * kBoxCols);
    for (unsigned r = 0; r < rows; ++r)
      for (unsigned c = 0; c < kBoxCols; ++c)
        matrix[r * kBoxCols + c] = u16((r * 131 + c) & 0xffff);
    unsigned share = setup.multicast ? kBoxRows / g_cluster : kBoxRows;
    shared = EmuMap{matrix.data(), rows, cols, kBoxCols, share, kBoxCols,
                    true};
    own = EmuMap{matrix.data(), rows, cols, kBoxCols, kBoxRows, kBoxCols,
                 true};
  }

  void fail(const std::string &what) {
    std::lock_guard<std::mutex> hold(failureLock);
    if (failures++ == 0)
      firstFailure = what;
  }

  // Stage layout: buffer 0 (the multicast operand) then buffer 1.
  unsigned char *buffer(unsigned rank, int j) {
    return g_blocks[rank].arena.data() + 4096 + size_t(j) * S * kBox * 2;
  }

  void producer(unsigned rank, EnigmaRing<S> ring) {
    g_rank = rank;
    threadIdx.x = 128 * unsigned(setup.warps);
    blockIdx.x = rank;
    EnigmaRingCheck check{record, 1};
    int commits = setup.iterations - (setup.commitOneLess ? 1 : 0);
    for (int i = 0; i < commits; ++i) {
      unsigned slot = enigma_ring_acquire(ring, &check);
      if (record[0])
        return;
      auto *a = reinterpret_cast<u16 *>(buffer(rank, 0));
      auto *b = reinterpret_cast<u16 *>(buffer(rank, 1));
      for (unsigned lane = 0; lane < 32; ++lane) {
        if (setup.multicast && g_cluster > 1)
          enigma_stage_copy<kBoxRows, kBoxCols, kBoxCols, kBox, 3, 3, 3, true,
                            2>(ring, slot, &shared, a,
                               enigma_mma::u64(slot) * kBox, matrix.data(),
                               unsigned(i * kBoxRows), 0, rows, cols,
                               kBoxCols, lane);
        else
          enigma_stage_copy<kBoxRows, kBoxCols, kBoxCols, kBox, 3, 3, 3,
                            false, 1>(ring, slot, &own, a,
                                      enigma_mma::u64(slot) * kBox,
                                      matrix.data(), unsigned(i * kBoxRows),
                                      0, rows, cols, kBoxCols, lane);
        enigma_stage_copy<kBoxRows, kBoxCols, kBoxCols, kBox, 3, 3, 3, false,
                          1>(ring, slot, &own, b,
                             enigma_mma::u64(slot) * kBox, matrix.data(),
                             unsigned(i * kBoxRows), 0, rows, cols, kBoxCols,
                             lane);
      }
      enigma_ring_commit(ring, slot, unsigned(2 * kBox * 2), 0u);
    }
  }

  /// A ring with a transposing copy: every producer thread acquires,
  /// thread 0 issues buffer 0's copy (the TMA, or the first warp's
  /// cp.async), each thread stores its share of buffer 1 late and then
  /// arrives (enigma_ring_commit_transposed: thread 0 expecting buffer
  /// 0's bytes only).
  void producerThread(unsigned rank, EnigmaRing<S> ring, unsigned ptid) {
    g_rank = rank;
    threadIdx.x = 32 * unsigned(setup.warps) + ptid;
    blockIdx.x = rank;
    EnigmaRingCheck check{record, 1};
    const unsigned threads = unsigned(setup.producerThreads);
    for (int i = 0; i < setup.iterations; ++i) {
      unsigned slot = enigma_ring_acquire(ring, &check);
      if (record[0])
        return;
      auto *a = reinterpret_cast<u16 *>(buffer(rank, 0));
      auto *b = reinterpret_cast<u16 *>(buffer(rank, 1));
      if (ptid == 0)
        for (unsigned lane = 0; lane < 32; ++lane)
          enigma_stage_copy<kBoxRows, kBoxCols, kBoxCols, kBox, 3, 3, 3,
                            false, 1>(ring, slot, &own, a,
                                      enigma_mma::u64(slot) * kBox,
                                      matrix.data(), unsigned(i * kBoxRows),
                                      0, rows, cols, kBoxCols, lane);
      std::this_thread::sleep_for(std::chrono::microseconds(g_random() % 60));
      {
        std::lock_guard<std::mutex> hold(g_lock);
        for (unsigned e = ptid; e < unsigned(kBox); e += threads)
          b[slot * kBox + swizzled(e, true)] =
              expected(i, int(e / kBoxCols), int(e % kBoxCols), rows, cols);
      }
      enigma_ring_commit_transposed(ring, slot, unsigned(kBox * 2), ptid);
    }
  }

  void verify(unsigned rank, int warp, int i, unsigned slot,
              const char *when) {
    std::lock_guard<std::mutex> hold(g_lock);
    for (int j = 0; j < 2; ++j) {
      const auto *stage =
          reinterpret_cast<const u16 *>(buffer(rank, j)) + slot * kBox;
      for (int r = 0; r < kBoxRows; ++r)
        for (int c = 0; c < kBoxCols; ++c) {
          u16 got = stage[swizzled(unsigned(r * kBoxCols + c), true)];
          u16 want = expected(i, r, c, rows, cols);
          if (got != want) {
            fail("block " + std::to_string(rank) + " warp " +
                 std::to_string(warp) + " iteration " + std::to_string(i) +
                 " buffer " + std::to_string(j) + " (" + std::to_string(r) +
                 ", " + std::to_string(c) + ") " + when + ": " +
                 std::to_string(got) + " instead of " + std::to_string(want));
            return;
          }
        }
    }
  }

  void consumer(unsigned rank, int warp, EnigmaRing<S> ring) {
    g_rank = rank;
    threadIdx.x = unsigned(32 * warp);
    blockIdx.x = rank;
    EnigmaRingCheck check{record, 0};
    for (int i = 0; i < setup.iterations; ++i) {
      unsigned slot = enigma_ring_wait(ring, &check);
      if (record[0])
        return;
      // Checked when the wait returns and again just before the release:
      // a copy landing early or a stage refilled while still being read
      // both show as a box of another iteration.
      verify(rank, warp, i, slot, "at the wait");
      std::this_thread::sleep_for(std::chrono::microseconds(g_random() % 40));
      verify(rank, warp, i, slot, "before the release");
      if (g_cluster == 2)
        enigma_ring_release<2>(ring, 0u);
      else
        enigma_ring_release<1>(ring, 0u);
    }
  }

  void go() {
    g_blocks.assign(g_cluster, Block{});
    g_bars.clear();
    g_queue.clear();
    g_stop = false;
    std::thread tma(engine);
    std::vector<std::thread> threads;
    std::vector<EnigmaRing<S>> rings;
    // Every block sets up its barriers before any thread of the cluster
    // starts (the cluster barrier of enigma_ring_begin).
    for (unsigned rank = 0; rank < g_cluster; ++rank) {
      g_rank = rank;
      auto *bars = reinterpret_cast<unsigned long long *>(
          g_blocks[rank].arena.data());
      // Thread 0 of each block sets up its barriers.
      EnigmaRing<S> ring =
          setup.producerThreads
              ? enigma_ring_begin<S, 1>(bars, unsigned(setup.warps), 0u,
                                        setup.tma,
                                        unsigned(setup.producerThreads))
              : enigma_ring_begin<S, 1>(bars, unsigned(setup.warps), 0u,
                                        setup.tma);
      // The empty barriers count the consumer warps of the cluster.
      for (int s = 0; s < S; ++s) {
        std::lock_guard<std::mutex> hold(g_lock);
        Barrier &b = barrierAt(rank, ring.bars + 8u * unsigned(S + s));
        b.expected = b.pending = unsigned(setup.warps) * g_cluster;
      }
      rings.push_back(ring);
    }
    // A protocol error (an arrival beyond the count, a barrier used
    // before it exists) fails the test instead of ending the process.
    auto guarded = [this](std::function<void()> body) {
      return [this, body] {
        try {
          body();
        } catch (const std::exception &e) {
          fail(e.what());
          record[0] = 1; // let every other wait return
        }
      };
    };
    for (unsigned rank = 0; rank < g_cluster; ++rank) {
      EnigmaRing<S> ring = rings[rank];
      for (int p = 0; p < setup.producerThreads; ++p)
        threads.emplace_back(guarded([this, rank, ring, p] {
          producerThread(rank, ring, unsigned(p));
        }));
      if (!setup.producerThreads)
        threads.emplace_back(
            guarded([this, rank, ring] { producer(rank, ring); }));
      for (int w = 0; w < setup.warps; ++w)
        threads.emplace_back(
            guarded([this, rank, w, ring] { consumer(rank, w, ring); }));
    }
    for (std::thread &t : threads)
      t.join();
    g_stop = true;
    tma.join();
  }
};

template <int S> void runPipeline(RingSetup s, unsigned cluster) {
  g_cluster = cluster;
  s.stages = S;
  RingRun<S> run(s);
  run.go();
  EXPECT_EQ(run.failures.load(), 0) << run.firstFailure;
  if (run.failures.load())
    return;
  EXPECT_EQ(run.record[0], 0u)
      << "a wait timed out: site " << run.record[1] - 1 << ", stage "
      << run.record[2] << ", phase " << run.record[3];
  EXPECT_EQ(run.failures.load(), 0) << run.firstFailure;
}

} // namespace

TEST(RingEmulation, EveryStageHoldsItsIterationsBoxes) {
  for (bool tma : {true, false}) {
    RingSetup s;
    s.tma = tma;
    runPipeline<2>(s, 1);
    runPipeline<3>(s, 1);
    runPipeline<4>(s, 1);
  }
}

TEST(RingEmulation, ClustersShareAMulticastOperand) {
  for (bool tma : {true, false}) {
    RingSetup s;
    s.tma = tma;
    s.multicast = true;
    runPipeline<2>(s, 2);
    runPipeline<3>(s, 2);
  }
}

TEST(RingEmulation, TransposingCopiesArriveBesideTheTma) {
  // Buffer 0 through the TMA (or cp.async), buffer 1 stored by 8 producer
  // threads that each arrive: no stage is seen before both are complete,
  // none is refilled while read.
  for (bool tma : {true, false}) {
    RingSetup s;
    s.tma = tma;
    s.producerThreads = 8;
    s.iterations = 23;
    runPipeline<2>(s, 1);
    runPipeline<4>(s, 1);
  }
}

TEST(RingEmulation, AMissingCommitIsReportedNotHung) {
  g_cluster = 1;
  RingSetup s;
  s.commitOneLess = true;
  s.iterations = 5;
  RingRun<2> run(s);
  auto start = std::chrono::steady_clock::now();
  run.go();
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  EXPECT_LT(seconds, 5.0);
  ASSERT_NE(run.record[0], 0u);
  EXPECT_EQ(run.record[1], 1u);          // site 0: the consumers' full barrier
  EXPECT_EQ(run.record[2], 0u);          // stage 4 % 2
  EXPECT_EQ(run.record[3], 2u);          // its third use: phase 2
  EXPECT_GE(run.record[7], 1u);
  EXPECT_EQ(run.failures.load(), 0) << run.firstFailure;
}
