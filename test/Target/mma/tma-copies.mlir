// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL

// Which tile copies the CUDA text of a kernel compiled with cuda_tma (the
// enigma.cuda_tma attribute) issues through the Tensor Memory Accelerator
// (lib/Target/CUDA/CudaTensorMaps.h): a buffer source with a scalar or
// constant pitch and a dense or 128-byte swizzled destination gets a
// tensor map; copies of one buffer, pitch, box and swizzle share it. Where
// the offset is row * pitch + column the copy gets the row and column.

// CHECK-LABEL: extern "C" __global__ void enigma_kernel_shared_maps(
// CHECK: const EnigmaCudaLaunch enigma_launch,
// CHECK-NEXT: const __grid_constant__ EnigmaTensorMap enigma_tmap0,
// CHECK-NEXT: const __grid_constant__ EnigmaTensorMap enigma_tmap1,
// CHECK-NEXT: const uint enigma_tmap_valid) {
// CHECK: EnigmaTmaGroups enigma_tma = enigma_tma_begin((uint)enigma_linear);
// CHECK: enigma_copy_tile_tma<64, 64, 64, 3, 3, 3, 0>(enigma_tma, enigma_tmap0, (enigma_tmap_valid >> 0) & 1u, {{v[0-9]+}}, 0ul, A, 0ul, lda,
// CHECK: enigma_copy_tile_tma<64, 64, 64, 3, 3, 3, 0>(enigma_tma, enigma_tmap0, (enigma_tmap_valid >> 0) & 1u, {{v[0-9]+}}, 4096ul, A, 64ul, lda,
// CHECK: enigma_copy_tile_tma<16, 32, 32, 0, 0, 0, 0>(enigma_tma, enigma_tmap1, (enigma_tmap_valid >> 1) & 1u, {{v[0-9]+}}, 0ul, B, 0ul, 100ul, 64ul, 64ul, (uint)enigma_linear, (uint)(enigma_sx * enigma_sy * enigma_sz));
// CHECK: enigma_copy_tile_tma<64, 64, 64, 3, 3, 3, 0>(enigma_tma, enigma_tmap0, {{.*}}, (ulong)(row), (ulong)(64ul));
// CHECK: enigma_tma_commit(enigma_tma, (uint)enigma_linear);
// CHECK: enigma_tma_wait<0>(enigma_tma);
// MSL-LABEL: kernel void enigma_kernel_shared_maps(
// MSL-NOT: tma
// MSL: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>(
enigma.kernel @shared_maps(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"},
    %lda: i32 {enigma.name = "lda", enigma.dtype = "u32"},
    %row: i32 {enigma.name = "row", enigma.dtype = "u32"}) attributes {enigma.cuda_tma} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c100 = arith.constant 100 : index
  %c4096 = arith.constant 4096 : index
  %ld = arith.index_castui %lda : i32 to index
  %a_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<512xf32, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %a_s[%c0], %A[%c0], %ld, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_tile_async %a_s[%c4096], %A[%c64], %ld, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_tile_async %b_s[%c0], %B[%c0], %c100, %c64, %c64 {rows = 16, cols = 32, dst_ld = 32} : memref<512xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
  %r = arith.index_castui %row : i32 to index
  %rl = arith.muli %r, %ld : index
  %off = arith.addi %rl, %c64 : index
  enigma.copy_tile_async %a_s[%c0], %A[%off], %ld, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.barrier <threadgroup>
  enigma.return
}

// A padded destination (dst_ld > cols), a swizzle other than the 128-byte
// one, a computed pitch and a box of more than 256 rows stay cp.async; a
// kernel without maps keeps the plain commit and wait.
// CHECK-LABEL: extern "C" __global__ void enigma_kernel_plain_copies(
// CHECK-NOT: EnigmaTensorMap
// CHECK: const EnigmaCudaLaunch enigma_launch) {
// CHECK-NOT: enigma_tma
// CHECK: enigma_copy_tile_async<16, 32, 40, 0, 0, 0, 0>(
// CHECK: enigma_copy_tile_async<16, 64, 64, 2, 3, 3, 0>(
// CHECK: enigma_copy_tile_async<16, 64, 64, 3, 3, 3, 0>(
// CHECK: enigma_copy_tile_async<512, 8, 8, 0, 0, 0, 0>(
// CHECK: enigma_copy_async_commit();
// CHECK: enigma_copy_async_wait<0>();
enigma.kernel @plain_copies(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %lda: i32 {enigma.name = "lda", enigma.dtype = "u32"}) attributes {enigma.cuda_tma} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %ld = arith.index_castui %lda : i32 to index
  %ld2 = arith.muli %ld, %c2 : index
  %s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %s[%c0], %A[%c0], %ld, %c64, %c64 {rows = 16, cols = 32, dst_ld = 40} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_tile_async %s[%c0], %A[%c0], %ld, %c64, %c64 {rows = 16, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 2, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_tile_async %s[%c0], %A[%c0], %ld2, %c64, %c64 {rows = 16, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_tile_async %s[%c0], %A[%c0], %ld, %c64, %c64 {rows = 512, cols = 8, dst_ld = 8} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.barrier <threadgroup>
  enigma.return
}

// Without the attribute (the default) the copies keep cp.async.
// CHECK-LABEL: extern "C" __global__ void enigma_kernel_not_asked(
// CHECK: const EnigmaCudaLaunch enigma_launch) {
// CHECK-NOT: enigma_tma
// CHECK: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>(
// CHECK: enigma_copy_async_commit();
enigma.kernel @not_asked(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %lda: i32 {enigma.name = "lda", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %ld = arith.index_castui %lda : i32 to index
  %s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %s[%c0], %A[%c0], %ld, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.barrier <threadgroup>
  enigma.return
}

// A copy into column blocks gets a map of one block's box (the kernel
// issues one box per block) when the blocks start where the 128-byte
// swizzle starts (multiples of 1024 bytes); else it keeps cp.async.
// CHECK-LABEL: extern "C" __global__ void enigma_kernel_column_blocks(
// CHECK-NEXT: bfloat* B,
// CHECK: const __grid_constant__ EnigmaTensorMap enigma_tmap0,
// CHECK-NEXT: const uint enigma_tmap_valid) {
// CHECK: enigma_copy_tile_tma<64, 128, 64, 3, 3, 3, 4096>(enigma_tma, enigma_tmap0,
// CHECK: enigma_copy_tile_async<64, 128, 64, 3, 3, 3, 4104>(
enigma.kernel @column_blocks(
    %B: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "bf16"},
    %ldb: i32 {enigma.name = "ldb", enigma.dtype = "u32"}) attributes {enigma.cuda_tma} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %ld = arith.index_castui %ldb : i32 to index
  %s = enigma.threadgroup_alloc : memref<16384xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %s[%c0], %B[%c0], %ld, %c64, %c128 {rows = 64, cols = 128, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>, block_stride = 4096} : memref<16384xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_tile_async %s[%c0], %B[%c0], %ld, %c64, %c128 {rows = 64, cols = 128, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>, block_stride = 4104} : memref<16384xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.barrier <threadgroup>
  enigma.return
}
