// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=ROUND

// A tile copy into column blocks (block_stride): one copy of the whole
// 64 x 128 tile, its two 64-column blocks 4096 elements apart; the block
// stride is the copy's last template argument on every target.

// CUDA: enigma_copy_tile_async<64, 128, 64, 3, 3, 3, 4096>(
// MSL: enigma_copy_tile_async<64, 128, 64, 3, 3, 3, 4096>(
// CPP: enigma_copy_tile_async<64, 128, 64, 3, 3, 3, 4096>(
// ROUND: enigma.copy_tile_async {{.*}} {block_stride = 4096 : i64, cols = 128 : i64, dst_ld = 64 : i64, dst_swizzle = array<i32: 3, 3, 3>, rows = 64 : i64}
enigma.kernel @blocks(
    %B: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "bf16"},
    %ldb: i32 {enigma.name = "ldb", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %ld = arith.index_castui %ldb : i32 to index
  %b_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %b_s[%c0], %B[%c0], %ld, %c64, %c128 {rows = 64, cols = 128, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>, block_stride = 4096} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.return
}
